package quant

import "strings"

// quantConfig returns config.json's quantization_config for the target, or
// nil when the output is not quantized (bf16).
func quantConfig(opts *Options) map[string]any {
	switch opts.Target {
	case ToFP8Block:
		return map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
			"weight_block_size": []int{FP8Block, FP8Block}, "modules_to_not_convert": opts.Recipe.Exclude}
	case ToNVFP4:
		if opts.Layout == LayoutCompressedTensors {
			return compressedTensorsConfig(opts.Recipe)
		}
		return modelOptConfig(opts.Recipe)
	}
	return nil
}

// fp4Args are the weight quantization arguments of both layouts.
func fp4Args() map[string]any {
	return map[string]any{"num_bits": 4, "type": "float", "group_size": GroupSize, "dynamic": false}
}

// modelOptConfig is ModelOpt's quantization_config for weight-only NVFP4.
func modelOptConfig(r *Recipe) map[string]any {
	return map[string]any{
		"quant_method": "modelopt", "quant_algo": "NVFP4", "producer": map[string]any{"name": "drama"},
		"kv_cache_quant_algo": nil, "group_size": GroupSize, "exclude_modules": r.Exclude, "ignore": r.Exclude,
		"config_groups": map[string]any{"group_0": map[string]any{"weights": fp4Args(), "targets": []string{"Linear"}}},
	}
}

// hfQuantConfig is ModelOpt's hf_quant_config.json.
func hfQuantConfig(r *Recipe) map[string]any {
	return map[string]any{
		"producer": map[string]any{"name": "drama"},
		"quantization": map[string]any{"quant_algo": "NVFP4", "kv_cache_quant_algo": nil,
			"group_size": GroupSize, "exclude_modules": r.Exclude},
	}
}

// compressedTensorsConfig is compressed-tensors' nvfp4-pack-quantized
// weight-only (NVFP4A16) config; ignore entries are regular expressions.
func compressedTensorsConfig(r *Recipe) map[string]any {
	w := fp4Args()
	w["strategy"] = "tensor_group"
	w["symmetric"] = true
	w["observer"] = "minmax"
	ignore := make([]string, len(r.Exclude))
	for i, p := range r.Exclude {
		ignore[i] = wildcardToRegexp(p)
	}
	return map[string]any{
		"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "quantization_status": "compressed",
		"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"},
			"format": "nvfp4-pack-quantized", "weights": w}},
		"ignore": ignore, "kv_cache_scheme": nil,
	}
}

// wildcardToRegexp turns a shell-style module pattern into compressed-
// tensors' "re:" form; a plain name stays as it is.
func wildcardToRegexp(p string) string {
	if !strings.ContainsAny(p, "*?") {
		return p
	}
	r := strings.NewReplacer(".", `\.`, "*", ".*", "?", ".")
	return "re:^" + r.Replace(p) + "$"
}
