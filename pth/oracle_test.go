package pth

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// oracleView is what gopickle sees in a _rebuild_tensor call.
type oracleView struct {
	key            string
	offset         int64
	shape, strides []int64
}

type oracleRebuild struct{ v3 bool }

func (o oracleRebuild) Call(args ...any) (any, error) {
	key, _ := args[0].(string)
	v := oracleView{key: key, offset: int64(args[1].(int))}
	v.shape, v.strides = oracleInts(args[2]), oracleInts(args[3])
	return v, nil
}

type oracleParameter struct{}

func (oracleParameter) Call(args ...any) (any, error) { return args[0], nil }

type oracleToken struct{ name string }

func oracleInts(v any) []int64 {
	t := v.(*types.Tuple)
	out := make([]int64, t.Len())
	for i := range out {
		out[i] = int64(t.Get(i).(int))
	}
	return out
}

// gopickleViews unpickles data.pkl with gopickle, under recover, and lists
// the state dict's tensor views in order.
func gopickleViews(pkl []byte) (names []string, views []oracleView, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("gopickle panicked: %v", p)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(pkl))
	u.FindClass = func(module, name string) (any, error) {
		switch {
		case module == "torch._utils" && strings.HasPrefix(name, "_rebuild_tensor_v"):
			return oracleRebuild{v3: name == "_rebuild_tensor_v3"}, nil
		case module == "torch._utils" && name == "_rebuild_parameter":
			return oracleParameter{}, nil
		case module == "torch" || module == "torch.storage":
			return oracleToken{module + "." + name}, nil
		}
		return nil, fmt.Errorf("global %s.%s", module, name)
	}
	u.PersistentLoad = func(pid any) (any, error) { return pid.(*types.Tuple).Get(2), nil }
	v, err := u.Load()
	if err != nil {
		return nil, nil, err
	}
	add := func(k, val any) {
		if tv, ok := val.(oracleView); ok {
			names, views = append(names, k.(string)), append(views, tv)
		}
	}
	switch d := v.(type) {
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			ent := e.Value.(*types.OrderedDictEntry)
			add(ent.Key, ent.Value)
		}
	case *types.Dict:
		for _, ent := range *d {
			add(ent.Key, ent.Value)
		}
	}
	return names, views, nil
}

// TestGopickleOracle checks the VM against gopickle, an independent
// unpickler, on every well-formed zip fixture: the same tensor names,
// storage keys, offsets, shapes and strides in the same order.
func TestGopickleOracle(t *testing.T) {
	for _, file := range []string{"dtypes", "proto4", "wn", "wn_folded", "keepvars", "casts"} {
		b, err := os.ReadFile("testdata/" + file + ".pth")
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		var pkl []byte
		for _, rec := range r.Records {
			if strings.HasSuffix(rec.Name, "/data.pkl") {
				pkl = b[rec.DataOffset : rec.DataOffset+rec.Size]
			}
		}
		names, views, err := gopickleViews(pkl)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(names) != len(r.Tensors) {
			t.Fatalf("%s: gopickle sees %d tensors, the VM %d", file, len(names), len(r.Tensors))
		}
		for i, x := range r.Tensors {
			v := views[i]
			if names[i] != x.Name || v.key != x.Storage.Key || v.offset != x.Offset || !slices.Equal(v.shape, x.Shape) || !slices.Equal(v.strides, x.Stride) {
				t.Errorf("%s: gopickle %s %+v, VM %s key %s offset %d %v %v", file, names[i], v, x.Name, x.Storage.Key, x.Offset, x.Shape, x.Stride)
			}
		}
	}
}
