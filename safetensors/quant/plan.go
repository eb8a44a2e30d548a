package quant

import (
	"fmt"
	"slices"

	"github.com/drama-tts/drama/safetensors"
)

// expertKey names one routed expert.
type expertKey struct{ layer, expert int }

// plan reads only headers: it groups expert tensors by module, checks the
// keep list and every module's source, and lays out each output shard.
func plan(in *safetensors.Checkpoint, opts *Options) (*planned, error) {
	mods, order, fused, err := collectModules(in, opts.Recipe)
	if err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("%w: no tensor of %s matches the %q recipe's expert pattern %s; give a recipe for these names with --recipe",
			ErrNoExperts, in.Dir, opts.Recipe.Name, opts.Recipe.Roles[RoleExpert])
	}
	if err := checkKeep(mods, opts.Keep); err != nil {
		return nil, err
	}
	jobs, err := makeJobs(mods, order, opts)
	if err != nil {
		return nil, err
	}
	p := &planned{result: &Result{Keep: opts.Keep}}
	countExperts(mods, opts.Keep, p.result)
	for _, name := range in.ShardNames() {
		sp, err := planShard(in.Files[name], name, &moduleSet{mods, jobs, fused}, opts, p.result)
		if err != nil {
			return nil, err
		}
		p.shards = append(p.shards, sp)
		p.result.Shards = append(p.result.Shards, name)
		p.result.BytesOut += sp.layout.DataSize()
	}
	return p, nil
}

// collectModules groups routed-expert tensors by module, in file order;
// fused 3-D expert tensors become per-expert modules of slices, and the
// third result lists, for each fused tensor, the modules made from it.
func collectModules(in *safetensors.Checkpoint, r *Recipe) (map[string]*module, []string, map[string][]string, error) {
	mods := map[string]*module{}
	var order, fusedOrder []string
	pairs := map[string]*fusedPair{}
	for _, t := range in.Tensors() {
		if ref, ok := r.Expert(t.Name); ok {
			m := mods[ref.Module]
			if m == nil {
				m = &module{ref: ref, tensors: map[string]*safetensors.Tensor{}}
				mods[ref.Module] = m
				order = append(order, ref.Module)
			}
			m.tensors[ref.Suffix] = t
		} else if f, ok := r.Fused(t.Name); ok {
			key := f.Module + "." + f.Proj
			if pairs[key] == nil {
				pairs[key] = &fusedPair{ref: f}
				fusedOrder = append(fusedOrder, key)
			}
			if f.Scale {
				pairs[key].scale = t
			} else {
				pairs[key].weight = t
			}
		}
	}
	fm, fnames, from, err := expandFused(pairs, fusedOrder, r)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, n := range fnames {
		if mods[n] != nil {
			return nil, nil, nil, fmt.Errorf("%w: %s is stored both per expert and fused", ErrShape, n)
		}
		mods[n] = fm[n]
	}
	return mods, append(order, fnames...), from, nil
}

// checkKeep validates the keep list against the experts present.
func checkKeep(mods map[string]*module, keep KeepList) error {
	if keep == nil {
		return nil
	}
	have := map[int][]int{}
	for _, m := range mods {
		if !slices.Contains(have[m.ref.Layer], m.ref.Expert) {
			have[m.ref.Layer] = append(have[m.ref.Layer], m.ref.Expert)
		}
	}
	for l := range have {
		slices.Sort(have[l])
	}
	return keep.Validate(have)
}

// makeJobs classifies every kept module and groups them into jobs: an
// expert's gate and up share a job (and an NVFP4 global scale).
func makeJobs(mods map[string]*module, order []string, opts *Options) (map[string]*job, error) {
	groups := map[string][]*module{}
	var keys []string
	for _, name := range order {
		m := mods[name]
		if !opts.Keep.Keeps(m.ref.Layer, m.ref.Expert) {
			continue
		}
		if err := checkModule(m, opts.Target); err != nil {
			return nil, err
		}
		key := name
		if opts.Target == ToNVFP4 && m.ref.Proj != opts.Recipe.Down {
			key = m.ref.parent() + "/gate+up"
		}
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], m)
	}
	jobs := map[string]*job{}
	for _, key := range keys {
		g := groups[key]
		j := newJob(len(g)*len(outputsFor(g[0], opts.Target, opts.Layout)), groupRunner(g, opts))
		j.bytes = footprint(g, opts)
		for _, m := range g {
			jobs[m.ref.Module] = j
		}
	}
	return jobs, nil
}

// footprint estimates the bytes a job holds while it runs: the source
// tensors it reads, the float32 values of paths that decode to floats, and
// its outputs.
func footprint(g []*module, opts *Options) int64 {
	var n int64
	for _, m := range g {
		for suffix, t := range m.tensors {
			if consumes(m.kind, suffix) {
				n += t.Size
			}
		}
		if opts.Target != ToNVFP4 || m.kind != srcFP8 {
			n += 4 * int64(m.rows) * int64(m.cols)
		}
		for _, o := range outputsFor(m, opts.Target, opts.Layout) {
			b := int64(o.dtype.Size())
			for _, d := range o.shape {
				b *= d
			}
			n += b
		}
	}
	return n
}

func checkModule(m *module, target Target) error {
	if err := m.classify(); err != nil {
		return err
	}
	switch {
	case target == ToNVFP4 && m.cols%GroupSize != 0:
		return fmt.Errorf("%w: %s: %d input columns is not a multiple of %d, which NVFP4 needs", ErrShape, m.ref.Module, m.cols, GroupSize)
	case target == ToNVFP4 && m.kind != srcFP8 && m.kind != srcFloat:
		return fmt.Errorf("quant: %s is already %s; dequantize it first", m.ref.Module, m.kind)
	case target == ToFP8Block && m.kind != srcFloat:
		return fmt.Errorf("quant: %s is %s; --to fp8-block needs a BF16, F16 or F32 source", m.ref.Module, m.kind)
	}
	return nil
}

func groupRunner(g []*module, opts *Options) func() (map[string][]byte, error) {
	bf16 := !opts.F32Intermediate
	return func() (map[string][]byte, error) {
		switch opts.Target {
		case ToNVFP4:
			return nvfp4Group(g, opts.Layout, bf16)
		case ToFP8Block:
			return fp8Module(g[0], bf16)
		}
		return bf16Module(g[0], bf16)
	}
}

// moduleSet is what planShard needs to know about the experts.
type moduleSet struct {
	mods  map[string]*module
	jobs  map[string]*job
	fused map[string][]string // fused tensor name -> modules made from it
}

// planShard lays out one output shard in the input shard's tensor order:
// pass-through tensors as they are, each kept module's outputs where its
// first tensor was (a fused tensor's modules in expert order), pruned
// modules left out.
func planShard(f *safetensors.ReadCloser, name string, ms *moduleSet, opts *Options, res *Result) (*shardPlan, error) {
	sp := &shardPlan{name: name, copyOf: map[string]*safetensors.Tensor{}, jobOf: map[string]*job{}, group: map[*job]int{}}
	var hs []safetensors.TensorHeader
	done := map[string]bool{}
	emit := func(mod string) {
		j := ms.jobs[mod]
		if j == nil || done[mod] {
			return
		}
		done[mod] = true
		res.Converted++
		if _, ok := sp.group[j]; !ok {
			sp.group[j] = len(sp.group)
		}
		for _, o := range outputsFor(ms.mods[mod], opts.Target, opts.Layout) {
			n := mod + "." + o.suffix
			hs = append(hs, safetensors.TensorHeader{Name: n, DType: o.dtype, Shape: o.shape})
			sp.jobOf[n] = j
		}
	}
	for _, t := range f.Tensors {
		res.BytesIn += t.Size
		if mods, isFused := ms.fused[t.Name]; isFused {
			for _, m := range mods {
				emit(m)
			}
			continue
		}
		ref, isExpert := opts.Recipe.Expert(t.Name)
		if !isExpert || (ms.jobs[ref.Module] != nil && !consumes(ms.mods[ref.Module].kind, ref.Suffix)) {
			hs = append(hs, safetensors.TensorHeader{Name: t.Name, DType: t.DType, Shape: t.Shape})
			sp.copyOf[t.Name] = t
			res.PassThrough++
			if t.DType == safetensors.F8E4M3 {
				res.FP8PassThrough++
			}
			continue
		}
		emit(ref.Module)
	}
	l, err := safetensors.Plan(hs, f.Metadata)
	if err != nil {
		return nil, fmt.Errorf("quant: %s: %w", name, err)
	}
	sp.layout = l
	return sp, nil
}

// consumes reports whether a source of kind k reads the tensor with suffix;
// a kept module's other tensors (a bias, say) pass through.
func consumes(k srcKind, suffix string) bool {
	switch k {
	case srcFP8:
		return suffix == "weight" || suffix == "weight_scale_inv"
	case srcNVFP4:
		return suffix == "weight" || suffix == "weight_scale" || suffix == "weight_scale_2"
	case srcNVFP4CT:
		return suffix == "weight_packed" || suffix == "weight_scale" || suffix == "weight_global_scale"
	}
	return suffix == "weight"
}

// countExperts counts the experts kept and pruned.
func countExperts(mods map[string]*module, keep KeepList, res *Result) {
	seen := map[expertKey]bool{}
	for _, m := range mods {
		k := expertKey{m.ref.Layer, m.ref.Expert}
		if seen[k] {
			continue
		}
		seen[k] = true
		if keep.Keeps(k.layer, k.expert) {
			res.Kept++
		} else {
			res.Pruned++
		}
	}
}
