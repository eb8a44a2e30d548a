package safetensors_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// Plan the file first, then let workers fill each tensor from a Source.
func ExamplePlan() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	values := map[string][]float32{"a.weight": {1, 2.5, -3}, "b.bias": {0.1}}
	layout, err := safetensors.Plan([]safetensors.TensorHeader{
		{Name: "a.weight", DType: safetensors.BF16, Shape: []int64{3}},
		{Name: "b.bias", DType: safetensors.F32, Shape: []int64{1}},
	}, map[string]string{"format": "pt"})
	if err != nil {
		log.Fatal(err)
	}
	src := safetensors.SourceFunc(func(ctx context.Context, t *safetensors.PlannedTensor, w io.Writer) error {
		v := values[t.Name]
		buf := make([]byte, t.Size)
		if t.DType == safetensors.BF16 {
			dtype.EncodeBF16(buf, v) // round to nearest even, like torch's .bfloat16()
		} else {
			for i, f := range v {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
			}
		}
		_, err := w.Write(buf)
		return err
	})
	path := filepath.Join(dir, "model.safetensors")
	if err := layout.WriteFile(context.Background(), path, src, safetensors.WriteOptions{Workers: 4}); err != nil {
		log.Fatal(err)
	}
	r, err := safetensors.OpenReader(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for _, t := range r.Tensors {
		fmt.Println(t.Name, t.DType, t.Shape, t.Size)
	}
	// Output:
	// a.weight BF16 [3] 6
	// b.bias F32 [1] 4
}
