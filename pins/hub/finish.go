package hub

import (
	"fmt"
	"os"
	"time"
)

// finish checks the digest and, when it matches, syncs the partial and
// renames it to its final name; a mismatch starts the file over once.
func (d *downloader) finish(q *queue, j *job) error {
	f := j.t.File
	if err := j.dig.check(f); err != nil {
		return d.restart(q, j, err)
	}
	j.wb.stop()
	if err := j.f.Sync(); err != nil {
		return diskError(j.t.Partial, err)
	}
	if err := os.Chmod(j.t.Partial, 0o644); err != nil {
		return diskError(j.t.Partial, err)
	}
	if err := os.Rename(j.t.Partial, j.t.Final); err != nil {
		return diskError(j.t.Final, err)
	}
	_ = os.Remove(j.statePath())
	j.mu.Lock()
	lag := time.Duration(0)
	if !j.lastByte.IsZero() {
		lag = time.Since(j.lastByte)
	}
	j.mu.Unlock()
	d.emit(Event{Kind: EventVerified, Path: f.Path, Size: f.Size, VerifyLag: lag})
	q.jobDone()
	return nil
}

// restart throws away a file whose digest did not match and queues it
// again; a second mismatch is fatal.
func (d *downloader) restart(q *queue, j *job, cause error) error {
	j.mu.Lock()
	j.restarts++
	if j.restarts > 1 {
		j.mu.Unlock()
		_ = os.Remove(j.statePath())
		_ = os.Remove(j.t.Partial)
		return fmt.Errorf("%w (after downloading it again)", cause)
	}
	d.emit(Event{Kind: EventRestart, Path: j.t.File.Path, Error: cause.Error()})
	if d.progress != nil {
		d.progress(j.t.File.Path, -j.t.File.Size)
	}
	j.done = make([]byte, len(j.done))
	j.hashed, j.hstate, j.dig, j.hashing = 0, [2][]byte{}, newDigester(j.t.File), false
	j.hashedChunks.Store(0)
	err := j.saveLocked() // the old sidecar vouches for the bad bytes
	j.mu.Unlock()
	if err != nil {
		return err
	}
	j.metaMu.Lock()
	j.meta = nil
	j.metaMu.Unlock()
	q.push(j.pending()...) // mutex order: the queue's mutex is never taken under j.mu
	return nil
}
