// Package stcmd implements `drama st`: safetensors checkpoint tools.
package stcmd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/quant"
)

// NewCmd returns the `drama st` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "st <command>",
		Short: "Inspect safetensors files and sharded checkpoints",
	}
	cmd.AddCommand(NewCmdInspect(f, nil))
	return cmd
}

// InspectOptions are the inputs of `drama st inspect`.
type InspectOptions struct {
	F       *cmdutil.Factory
	Path    string
	Tensors bool
	By      string // shape, dtype or role
}

// NewCmdInspect returns `drama st inspect`. runF, if not nil, replaces the
// run (tests).
func NewCmdInspect(f *cmdutil.Factory, runF func(context.Context, *InspectOptions) error) *cobra.Command {
	opts := &InspectOptions{F: f}
	cmd := &cobra.Command{
		Use:   "inspect FILE|DIR",
		Short: "Show a checkpoint's dtype and shape census and check its index",
		Long: strings.TrimSpace(`
Read the headers of a safetensors file, or of every shard of a checkpoint
directory (model.safetensors.index.json or model.safetensors), without
reading tensor data, and print a census: tensors, elements and bytes per
dtype and shape (--by dtype or --by role groups otherwise; roles come from
the default quantize recipe). With --tensors, list every tensor instead.
--json prints every census, the index metadata and the problems.

For a sharded checkpoint the index is checked against the shards: every
tensor in weight_map must be in its shard, every shard tensor in weight_map,
and metadata.total_size must equal the tensor bytes. Problems are printed on
standard error and the command exits with 3.`),
		Example: strings.TrimSpace(`
$ drama st inspect ~/.local/share/drama/full
$ drama st inspect model-00001-of-00008.safetensors --tensors
$ drama st inspect ./nvfp4 --by role
$ drama st inspect ./nvfp4 --json`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("want one FILE or DIR argument, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if opts.By != "shape" && opts.By != "dtype" && opts.By != "role" {
				return cmdutil.FlagErrorf("--by %q: want shape, dtype or role", opts.By)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runInspect(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Tensors, "tensors", false, "list every tensor (name, dtype, shape, bytes, shard)")
	cmd.Flags().StringVar(&opts.By, "by", "shape", "census rows: shape (dtype and shape), dtype, or role (from the default recipe)")
	return cmd
}

// Census is one row of the census: tensors of one dtype (and shape).
type Census struct {
	DType    string  `json:"dtype"`
	Shape    []int64 `json:"shape,omitempty"`
	Role     string  `json:"role,omitempty"`
	Tensors  int     `json:"tensors"`
	Elements int64   `json:"elements"`
	Bytes    int64   `json:"bytes"`
}

// TensorRow is one tensor in the --tensors listing.
type TensorRow struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Bytes int64   `json:"bytes"`
	Shard string  `json:"shard"`
}

// Report is the JSON document of `drama st inspect --json`.
type Report struct {
	Path     string                `json:"path"`
	Shards   []string              `json:"shards"`
	Tensors  int                   `json:"tensors"`
	Bytes    int64                 `json:"bytes"`
	DTypes   []Census              `json:"dtypes"`
	Shapes   []Census              `json:"shapes"`
	Roles    []Census              `json:"roles"`
	Metadata map[string]any        `json:"metadata,omitempty"`
	Problems []safetensors.Problem `json:"problems"`
	List     []TensorRow           `json:"tensor_list,omitempty"`
}

func runInspect(ctx context.Context, opts *InspectOptions) error {
	c, err := safetensors.OpenCheckpoint(opts.Path)
	if errors.Is(err, safetensors.ErrFormat) || errors.Is(err, safetensors.ErrMissingShard) {
		return cmdutil.MismatchError(err)
	} else if err != nil {
		return err
	}
	defer c.Close()
	rep := buildReport(c, opts)
	if err := printReport(opts.F, rep, opts.Tensors, opts.By); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			opts.F.Warnf("%s", p)
		}
		return cmdutil.MismatchError(fmt.Errorf("%s: %d index problems (see above): rewrite %s or restore the shards", opts.Path, len(rep.Problems), safetensors.IndexName))
	}
	return nil
}

func buildReport(c *safetensors.Checkpoint, opts *InspectOptions) *Report {
	rep := &Report{Path: opts.Path, Shards: c.ShardNames(), Problems: c.Check()}
	if rep.Problems == nil {
		rep.Problems = []safetensors.Problem{}
	}
	byDType, byShape, byRole := map[string]*Census{}, map[string]*Census{}, map[string]*Census{}
	recipe := quant.DefaultRecipe()
	for _, shard := range rep.Shards {
		for _, t := range c.Files[shard].Tensors {
			rep.Tensors++
			rep.Bytes += t.Size
			add(byDType, string(t.DType), Census{DType: string(t.DType)}, t)
			add(byShape, fmt.Sprint(t.DType, t.Shape), Census{DType: string(t.DType), Shape: t.Shape}, t)
			role := string(recipe.Role(t.Name))
			add(byRole, role+" "+string(t.DType), Census{Role: role, DType: string(t.DType)}, t)
			if opts.Tensors {
				rep.List = append(rep.List, TensorRow{t.Name, string(t.DType), t.Shape, t.Size, shard})
			}
		}
	}
	rep.DTypes, rep.Shapes, rep.Roles = sorted(byDType), sorted(byShape), sorted(byRole)
	if c.Index != nil {
		rep.Metadata = map[string]any{}
		for k, v := range c.Index.Metadata {
			rep.Metadata[k] = v
		}
	}
	return rep
}

func add(m map[string]*Census, key string, init Census, t *safetensors.Tensor) {
	c := m[key]
	if c == nil {
		c = &init
		m[key] = c
	}
	c.Tensors++
	c.Elements += t.NumElements()
	c.Bytes += t.Size
}

// sorted returns the census rows by bytes, largest first, then by key.
func sorted(m map[string]*Census) []Census {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m[keys[i]], m[keys[j]]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return keys[i] < keys[j]
	})
	out := make([]Census, len(keys))
	for i, k := range keys {
		out[i] = *m[k]
	}
	return out
}

func printReport(f *cmdutil.Factory, rep *Report, list bool, by string) error {
	if f.Global.JSON {
		return cmdutil.WriteJSON(f.IO.Out, rep)
	}
	if list {
		t := cmdutil.NewTable(f.IO, "name", "dtype", "shape", "bytes", "shard")
		for _, r := range rep.List {
			t.AddRow(r.Name, r.DType, shapeString(r.Shape), fmt.Sprint(r.Bytes), r.Shard)
		}
		return t.Render()
	}
	f.Infof("%s: %d tensors, %s in %d file(s)", rep.Path, rep.Tensors, cmdutil.HumanBytes(rep.Bytes), len(rep.Shards))
	rows, first := rep.Shapes, "shape"
	switch by {
	case "dtype":
		rows, first = rep.DTypes, ""
	case "role":
		rows, first = rep.Roles, "role"
	}
	headers := []string{"dtype", "tensors", "elements", "bytes"}
	if first != "" {
		headers = append([]string{first}, headers...)
	}
	t := cmdutil.NewTable(f.IO, headers...)
	for _, c := range rows {
		cells := []string{c.DType, fmt.Sprint(c.Tensors), fmt.Sprint(c.Elements), fmt.Sprint(c.Bytes)}
		switch first {
		case "shape":
			cells = append([]string{shapeString(c.Shape)}, cells...)
		case "role":
			cells = append([]string{c.Role}, cells...)
		}
		t.AddRow(cells...)
	}
	return t.Render()
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
