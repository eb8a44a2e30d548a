package serverec

import (
	"path/filepath"

	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/internal/model"
	"github.com/drama-tts/drama/internal/proc"
)

// RuntimeDir is where drama serve's engine plugin keeps the runtime file
// naming its native engine child: <root>/.drama/run.
func RuntimeDir(root string) string { return filepath.Join(root, model.StateDirName, "run") }

// EnginePID returns the pid of the native engine that rec's drama serve
// supervises, from the engine runtime files of its root: the one whose
// supervisor is rec's process or its child (the engine plugin). It returns
// 0 when none is known.
func EnginePID(root string, rec Record) int { return enginePIDIn(RuntimeDir(root), rec) }

// EnginePIDOf returns the pid of the native engine called name (as GET
// /ready's per_engine names it) of rec's drama serve running several, from
// the runtime files of <root>/.drama/run/<name>. It returns 0 when none is
// known, or name is no plain file name.
func EnginePIDOf(root string, rec Record, name string) int {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return 0
	}
	return enginePIDIn(filepath.Join(RuntimeDir(root), name), rec)
}

func enginePIDIn(dir string, rec Record) int {
	names, _ := filepath.Glob(native.RuntimeFile(dir, "*"))
	for _, name := range names {
		rt, err := native.ReadRuntimeFile(name)
		if err != nil {
			continue
		}
		if rt.Owner == rec.PID || Parent(rt.Owner) == rec.PID {
			return rt.PID
		}
	}
	return 0
}

// Parent returns a process's parent pid from /proc/PID/stat, or 0 where
// that is not available.
func Parent(pid int) int {
	st, _ := proc.Read(pid)
	return st.PPID
}
