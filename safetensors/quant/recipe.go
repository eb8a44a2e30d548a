package quant

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Role is what a tensor is in the model, as a recipe names it.
type Role string

// The roles a recipe can name. Only RoleExpert tensors are quantized.
const (
	RoleExpert       Role = "expert"
	RoleFusedExpert  Role = "fused_expert" // all experts of a layer in one 3-D tensor
	RoleRouter       Role = "router"
	RoleSharedExpert Role = "shared_expert"
	RoleAttention    Role = "attention"
	RoleNorm         Role = "norm"
	RoleEmbedding    Role = "embedding"
	RoleLMHead       Role = "lm_head"
	RoleOther        Role = "other"
)

var roleOrder = []Role{RoleExpert, RoleRouter, RoleSharedExpert, RoleAttention, RoleNorm, RoleEmbedding, RoleLMHead}

// Recipe says which tensors play which role. The expert pattern must have
// the named groups module (the projection's module path), layer, expert and
// proj; proj is matched against Gate, Up and Down. The fused_expert pattern
// (optional) matches 3-D tensors holding every expert of a layer, with the
// groups module (the experts' parent path), layer and proj, proj being
// GateUp ([experts, 2 x inter, hidden], gate rows first) or Down ([experts,
// hidden, inter]); a name ending in scale_inv is the block-FP8 scale of the
// weight of the same proj. Exclude lists the modules left unquantized, as
// shell-style wildcards, for the quantization config.
type Recipe struct {
	Name    string          `json:"name"`
	Roles   map[Role]string `json:"roles"`
	Gate    string          `json:"gate"`
	Up      string          `json:"up"`
	Down    string          `json:"down"`
	GateUp  string          `json:"gate_up"`
	Exclude []string        `json:"exclude"`

	res map[Role]*regexp.Regexp
}

// DefaultRecipe fits Qwen3-MoE-style names:
// model.layers.L.mlp.experts.E.{gate,up,down}_proj.weight, with
// weight_scale_inv beside block-FP8 weights.
func DefaultRecipe() *Recipe {
	r := &Recipe{
		Name: "qwen3-moe",
		Roles: map[Role]string{
			RoleExpert:       `^(?P<module>(?:.*\.)?layers\.(?P<layer>\d+)\.mlp\.experts\.(?P<expert>\d+)\.(?P<proj>gate_proj|up_proj|down_proj))\.`,
			RoleFusedExpert:  `^(?P<module>(?:.*\.)?layers\.(?P<layer>\d+)\.mlp\.experts)\.(?P<proj>gate_up_proj|down_proj)(?:\.weight)?(?:_scale_inv)?$`,
			RoleRouter:       `\.mlp\.gate\.`,
			RoleSharedExpert: `\.mlp\.shared_expert(_gate)?\.`,
			RoleAttention:    `\.(self_attn|linear_attn|attn)\.`,
			RoleNorm:         `norm\.`,
			RoleEmbedding:    `embed_tokens\.`,
			RoleLMHead:       `(^|\.)lm_head\.`,
		},
		Gate: "gate_proj", Up: "up_proj", Down: "down_proj", GateUp: "gate_up_proj",
		Exclude: []string{"lm_head", "*embed_tokens", "*.mlp.gate", "*.mlp.shared_expert", "*.mlp.shared_expert_gate",
			"*.self_attn*", "*.linear_attn*", "*mtp*", "*visual*"},
	}
	if err := r.compile(); err != nil {
		panic(err) // the default recipe is a constant
	}
	return r
}

// LoadRecipe reads a recipe from a JSON file; roles it leaves out keep the
// default recipe's patterns.
func LoadRecipe(path string) (*Recipe, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quant: recipe: %w", err)
	}
	r := DefaultRecipe()
	r.res = nil
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("quant: recipe %s: %w", path, err)
	}
	if r.Roles == nil { // "roles": null; an object is merged into the defaults
		r.Roles = DefaultRecipe().Roles
	}
	if err := r.compile(); err != nil {
		return nil, fmt.Errorf("quant: recipe %s: %w", path, err)
	}
	return r, nil
}

func (r *Recipe) compile() error {
	r.res = map[Role]*regexp.Regexp{}
	for role, p := range r.Roles {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("role %q: %w", role, err)
		}
		r.res[role] = re
	}
	ex := r.res[RoleExpert]
	if ex == nil {
		return fmt.Errorf("no %q pattern", RoleExpert)
	}
	for _, g := range []string{"module", "layer", "expert", "proj"} {
		if ex.SubexpIndex(g) < 0 {
			return fmt.Errorf("the expert pattern lacks the named group (?P<%s>...)", g)
		}
	}
	if r.Gate == "" || r.Up == "" || r.Down == "" {
		return fmt.Errorf("gate, up and down projection names are required")
	}
	if fe := r.res[RoleFusedExpert]; fe != nil {
		for _, g := range []string{"module", "layer", "proj"} {
			if fe.SubexpIndex(g) < 0 {
				return fmt.Errorf("the fused_expert pattern lacks the named group (?P<%s>...)", g)
			}
		}
	}
	return nil
}

// FusedRef locates a 3-D tensor holding every expert of a layer.
type FusedRef struct {
	Module string // the experts' parent, e.g. model.layers.3.mlp.experts
	Layer  int
	Proj   string // the recipe's GateUp or Down
	Scale  bool   // the block-FP8 scale_inv tensor rather than the weight
}

// Fused reports whether name is a fused expert tensor, and where.
func (r *Recipe) Fused(name string) (FusedRef, bool) {
	re := r.res[RoleFusedExpert]
	if re == nil {
		return FusedRef{}, false
	}
	m := re.FindStringSubmatch(name)
	if m == nil {
		return FusedRef{}, false
	}
	layer, err := strconv.Atoi(m[re.SubexpIndex("layer")])
	proj := m[re.SubexpIndex("proj")]
	if err != nil || (proj != r.GateUp && proj != r.Down) {
		return FusedRef{}, false
	}
	return FusedRef{Module: m[re.SubexpIndex("module")], Layer: layer, Proj: proj, Scale: strings.HasSuffix(name, "scale_inv")}, true
}

// ExpertRef locates one routed expert's projection.
type ExpertRef struct {
	Module string // e.g. model.layers.3.mlp.experts.17.gate_proj
	Layer  int
	Expert int
	Proj   string // gate, up or down (the recipe's Gate/Up/Down value)
	Suffix string // the rest of the tensor name, e.g. weight_scale_inv
}

// parent returns the expert's module path without the projection, e.g.
// model.layers.3.mlp.experts.17.
func (e ExpertRef) parent() string { return strings.TrimSuffix(e.Module, "."+e.Proj) }

// Expert reports whether name is a routed expert's tensor, and where.
func (r *Recipe) Expert(name string) (ExpertRef, bool) {
	re := r.res[RoleExpert]
	m := re.FindStringSubmatchIndex(name)
	if m == nil {
		return ExpertRef{}, false
	}
	get := func(g string) string {
		i := re.SubexpIndex(g)
		return name[m[2*i]:m[2*i+1]]
	}
	layer, err1 := strconv.Atoi(get("layer"))
	expert, err2 := strconv.Atoi(get("expert"))
	proj := get("proj")
	if err1 != nil || err2 != nil || (proj != r.Gate && proj != r.Up && proj != r.Down) {
		return ExpertRef{}, false
	}
	mod := get("module")
	return ExpertRef{Module: mod, Layer: layer, Expert: expert, Proj: proj, Suffix: strings.TrimPrefix(name[len(mod):], ".")}, true
}

// Role returns the first role whose pattern matches name, in the order
// expert, router, shared expert, attention, norm, embedding, lm_head; else
// RoleOther.
func (r *Recipe) Role(name string) Role {
	if _, ok := r.Expert(name); ok {
		return RoleExpert
	}
	if _, ok := r.Fused(name); ok {
		return RoleExpert
	}
	for _, role := range roleOrder[1:] { // the expert roles are handled above
		if re := r.res[role]; re != nil && re.MatchString(name) {
			return role
		}
	}
	return RoleOther
}
