package hub

import (
	"io"
	"os"
	"time"
)

// chunkDone marks a chunk finished, saves the sidecar and, unless another
// goroutine is at it, advances the file's hash.
func (d *downloader) chunkDone(q *queue, j *job, idx int) error {
	j.mu.Lock()
	setBit(j.done, idx)
	j.lastByte = time.Now()
	err := j.saveLocked()
	busy := j.hashing
	j.mu.Unlock()
	if err != nil {
		return err
	}
	if busy {
		return nil
	}
	return d.advanceHash(q, j)
}

// advanceHash feeds the contiguous finished prefix to the file's hashes
// (from the page cache) and finishes the file when the prefix is whole.
func (d *downloader) advanceHash(q *queue, j *job) error {
	j.mu.Lock()
	if j.hashing {
		j.mu.Unlock()
		return nil
	}
	j.hashing = true
	for {
		end := j.hashed
		for i := numChunks(j.hashed, j.chunk); i < j.n && bit(j.done, i); i++ {
			end += j.chunkLen(i)
		}
		if end == j.hashed {
			break
		}
		from := j.hashed
		j.mu.Unlock()
		err := hashRange(j.f, j.dig, from, end)
		// Start writeback of the hashed bytes now, so the fsync before the
		// rename has little left to flush.
		j.wb.add(from, end-from)
		s256, s1 := j.dig.marshal()
		j.mu.Lock()
		if err != nil {
			j.hashing = false
			j.mu.Unlock()
			return wrap(err, "%s: read back", j.t.File.Path)
		}
		j.hashed, j.hstate = end, [2][]byte{s256, s1}
		j.hashedChunks.Store(int64(numChunks(end, j.chunk)))
		q.cond.Broadcast() // chunks further on may now be taken
		if err := j.saveLocked(); err != nil {
			j.hashing = false
			j.mu.Unlock()
			return err
		}
	}
	complete := j.hashed == j.t.File.Size
	j.mu.Unlock()
	if complete {
		return d.finish(q, j)
	}
	j.mu.Lock()
	j.hashing = false
	j.mu.Unlock()
	// A chunk may have finished between the last check and the release.
	if j.nextDone() {
		return d.advanceHash(q, j)
	}
	return nil
}

func (j *job) nextDone() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := numChunks(j.hashed, j.chunk)
	return !j.hashing && i < j.n && bit(j.done, i)
}

func hashRange(f *os.File, w io.Writer, from, to int64) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	_, err := io.CopyBuffer(w, io.NewSectionReader(f, from, to-from), *bp)
	return err
}
