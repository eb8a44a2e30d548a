package quant

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
)

// ErrKeepList matches a keep list or router statistics that do not fit the
// checkpoint.
var ErrKeepList = errors.New("quant: bad expert keep list")

// KeepList is the routed experts kept in each MoE layer: layer -> ascending
// expert ids. In JSON (the --experts file and metadata.drama_experts) it is
// an object whose keys are layer numbers as decimal strings.
type KeepList map[int][]int

// MarshalJSON writes layers in numeric order.
func (k KeepList) MarshalJSON() ([]byte, error) {
	layers := make([]int, 0, len(k))
	for l := range k {
		layers = append(layers, l)
	}
	sort.Ints(layers)
	b := []byte{'{'}
	for i, l := range layers {
		if i > 0 {
			b = append(b, ',')
		}
		ids, _ := json.Marshal(k[l])
		b = append(b, fmt.Sprintf("%q:%s", strconv.Itoa(l), ids)...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object of layer -> expert ids.
func (k *KeepList) UnmarshalJSON(b []byte) error {
	var raw map[string][]int
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*k = KeepList{}
	for ls, ids := range raw {
		l, err := strconv.Atoi(ls)
		if err != nil || l < 0 {
			return fmt.Errorf("layer key %q is not a layer number", ls)
		}
		ids = slices.Clone(ids)
		sort.Ints(ids)
		(*k)[l] = slices.Compact(ids)
	}
	return nil
}

// ReadKeepList reads a keep list file: either the object itself, or a
// model.safetensors.index.json whose metadata carries drama_experts.
func ReadKeepList(path string) (KeepList, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quant: keep list: %w", err)
	}
	var ix struct {
		Metadata struct {
			Experts *KeepList `json:"drama_experts"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &ix) == nil && ix.Metadata.Experts != nil {
		return *ix.Metadata.Experts, nil
	}
	var k KeepList
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%w: %s: want an object of layer -> [expert ids]: %v", ErrKeepList, path, err)
	}
	return k, nil
}

// RouterStats is each expert's summed router weight per layer.
type RouterStats map[int][]float64

// ReadRouterStats reads an object of layer (decimal string) -> [weight per
// expert, indexed by expert id].
func ReadRouterStats(path string) (RouterStats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quant: router stats: %w", err)
	}
	var raw map[string][]float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: want an object of layer -> [weight per expert]: %v", ErrKeepList, path, err)
	}
	st := RouterStats{}
	for ls, w := range raw {
		l, err := strconv.Atoi(ls)
		if err != nil || l < 0 {
			return nil, fmt.Errorf("%w: %s: layer key %q is not a layer number", ErrKeepList, path, ls)
		}
		st[l] = w
	}
	return st, nil
}

// Coverage returns, for each layer, the smallest set of experts whose summed
// router weight reaches at least coverage of the layer's total; among equal
// weights the lower expert id is taken first. coverage must be in (0, 1].
func Coverage(st RouterStats, coverage float64) (KeepList, error) {
	if !(coverage > 0 && coverage <= 1) {
		return nil, fmt.Errorf("%w: coverage %v is outside (0, 1]", ErrKeepList, coverage)
	}
	keep := KeepList{}
	for l, w := range st {
		ids, err := cover(w, coverage)
		if err != nil {
			return nil, fmt.Errorf("%w: layer %d: %v", ErrKeepList, l, err)
		}
		keep[l] = ids
	}
	return keep, nil
}

func cover(w []float64, coverage float64) ([]int, error) {
	var total float64
	for e, v := range w {
		if !(v >= 0) || v > 1e300 {
			return nil, fmt.Errorf("expert %d has weight %v, want a finite non-negative number", e, v)
		}
		total += v
	}
	if total == 0 {
		return nil, fmt.Errorf("no router weight at all")
	}
	order := make([]int, len(w))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return w[order[a]] > w[order[b]] })
	var sum float64
	var kept []int
	for _, e := range order {
		kept = append(kept, e)
		if sum += w[e]; sum >= coverage*total {
			break
		}
	}
	sort.Ints(kept)
	return kept, nil
}

// Validate checks the keep list against the routed experts each layer has
// (layer -> ascending expert ids): every MoE layer listed, every id present
// in the checkpoint, at least one expert kept per layer, no unknown layer.
func (k KeepList) Validate(experts map[int][]int) error {
	for l, ids := range k {
		have, ok := experts[l]
		if !ok {
			return fmt.Errorf("%w: layer %d has no routed experts in the checkpoint", ErrKeepList, l)
		}
		if len(ids) == 0 {
			return fmt.Errorf("%w: layer %d keeps no expert", ErrKeepList, l)
		}
		for _, e := range ids {
			if _, found := slices.BinarySearch(have, e); !found {
				return fmt.Errorf("%w: layer %d: expert %d does not exist (the layer has %d experts, %d..%d)",
					ErrKeepList, l, e, len(have), have[0], have[len(have)-1])
			}
		}
	}
	for l := range experts {
		if _, ok := k[l]; !ok {
			return fmt.Errorf("%w: no entry for layer %d; list every MoE layer", ErrKeepList, l)
		}
	}
	return nil
}

// Keeps reports whether expert e of layer l is kept (always, for a nil list).
func (k KeepList) Keeps(l, e int) bool {
	if k == nil {
		return true
	}
	_, found := slices.BinarySearch(k[l], e)
	return found
}
