package host

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
)

// Prefix starts every plugin binary's name.
const Prefix = "drama-engine-"

// EnvPluginDir names the environment variable holding extra plugin
// directories, separated like PATH.
const EnvPluginDir = "DRAMA_PLUGIN_DIR"

// Sources of a search directory, as Dir.Source names them.
const (
	SourceFlag = "--plugin-dir"
	SourceEnv  = "$" + EnvPluginDir
	SourceExe  = "beside drama"
	SourceRoot = "root"
)

// ErrNotFound is returned by Find when no directory holds the plugin.
var ErrNotFound = errors.New("plugin not found")

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Dir is one directory searched for plugins and why it is searched.
type Dir struct {
	Path   string
	Source string
}

// Search says where to look for plugins. Empty fields are skipped.
type Search struct {
	Flag string // --plugin-dir
	Env  string // the value of $DRAMA_PLUGIN_DIR
	Exe  string // the drama binary's path
	Root string // the drama root
}

// Dirs returns the directories to search, in order, without duplicates.
func (s Search) Dirs() []Dir {
	var dirs []Dir
	add := func(p, src string) {
		if p == "" {
			return
		}
		p = filepath.Clean(p)
		for _, d := range dirs {
			if d.Path == p {
				return
			}
		}
		dirs = append(dirs, Dir{Path: p, Source: src})
	}
	add(s.Flag, SourceFlag)
	for _, p := range filepath.SplitList(s.Env) {
		add(p, SourceEnv)
	}
	if s.Exe != "" {
		add(filepath.Dir(s.Exe), SourceExe)
	}
	if s.Root != "" {
		add(filepath.Join(s.Root, "plugins"), SourceRoot)
	}
	return dirs
}

// Candidate is a plugin binary found on disk, not yet checked or run.
type Candidate struct {
	Name     string   // the part after drama-engine-
	Path     string   // the binary
	Source   string   // why its directory was searched
	Shadowed []string // binaries of the same name in later directories
}

// PluginName returns the plugin name a file name stands for, and false when
// the file is not a plugin binary (a checksum file, another program).
func PluginName(file string) (string, bool) {
	if runtime.GOOS == "windows" {
		if !strings.HasSuffix(strings.ToLower(file), ".exe") {
			return "", false
		}
		file = file[:len(file)-4]
	}
	name, ok := strings.CutPrefix(file, Prefix)
	if !ok || !nameRE.MatchString(name) {
		return "", false
	}
	return name, true
}

// BinaryName returns the file name of the plugin called name.
func BinaryName(name string) string {
	if runtime.GOOS == "windows" {
		return Prefix + name + ".exe"
	}
	return Prefix + name
}

// Discover lists the plugins in dirs, sorted by name. A directory that does
// not exist is skipped; one that cannot be read is an error.
func Discover(dirs []Dir) ([]Candidate, error) {
	byName := map[string]*Candidate{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("host: read plugin directory %s (%s): %w", d.Path, d.Source, err)
		}
		for _, e := range entries {
			name, ok := PluginName(e.Name())
			if !ok || !isFile(filepath.Join(d.Path, e.Name())) {
				continue
			}
			p := filepath.Join(d.Path, e.Name())
			if c := byName[name]; c != nil {
				c.Shadowed = append(c.Shadowed, p)
				continue
			}
			byName[name] = &Candidate{Name: name, Path: p, Source: d.Source}
		}
	}
	out := make([]Candidate, 0, len(byName))
	for _, c := range byName {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// isFile reports whether p is a regular file, following links.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Find returns the plugin called name from dirs.
func Find(dirs []Dir, name string) (Candidate, error) {
	if !nameRE.MatchString(name) {
		return Candidate{}, fmt.Errorf("host: plugin name %q: want lower-case letters, digits, '-' or '_'", name)
	}
	all, err := Discover(dirs)
	if err != nil {
		return Candidate{}, err
	}
	for _, c := range all {
		if c.Name == name {
			return c, nil
		}
	}
	var where []string
	for _, d := range dirs {
		where = append(where, d.Path)
	}
	return Candidate{}, fmt.Errorf("host: %s not in %s: %w (build it with `make build`, or pass --plugin-dir)",
		BinaryName(name), strings.Join(where, ", "), ErrNotFound)
}

// BinaryInfo is what a Go plugin binary says about itself without running:
// the target it was built for and its main module's version.
type BinaryInfo struct {
	OS, Arch, Version string
}

// ReadBinaryInfo reads the Go build information of the binary at path. A
// binary that is not a Go program gives an error.
func ReadBinaryInfo(path string) (BinaryInfo, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("host: read build info of %s: %w", path, err)
	}
	info := BinaryInfo{Version: bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			info.OS = s.Value
		case "GOARCH":
			info.Arch = s.Value
		}
	}
	return info, nil
}
