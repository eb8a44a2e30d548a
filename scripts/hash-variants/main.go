// Command hash-variants times ways of reading files for sha256 with N
// workers at once, the question behind verify's mapped reads: drama's own
// filehash.SHA256 (8 MiB mappings read in order, MADV_SEQUENTIAL), read(2)
// into a buffer, or read-only mappings of another window size, with the
// kernel told the window is read in order or asked to fill its page tables
// in one call (MADV_POPULATE_READ). It prints the rate and the CPU seconds
// (all, and system) per GB.
//
//	go build -o bin/hash-variants ./scripts/hash-variants
//	bin/hash-variants -workers 16 FILE...              # filehash.SHA256
//	bin/hash-variants -mode mmap -window 64 -populate FILE...
//	bin/hash-variants -mode read FILE...
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drama-tts/drama/internal/filehash"
)

func main() {
	mode := flag.String("mode", "drama", "drama (filehash.SHA256), mmap or read")
	window := flag.Int("window", 8, "MiB mapped at a time (mmap)")
	populate := flag.Bool("populate", false, "MADV_POPULATE_READ each window instead of MADV_SEQUENTIAL (mmap)")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "files hashed at once")
	flag.Parse()
	if flag.NArg() == 0 || (*mode != "drama" && *mode != "mmap" && *mode != "read") || *window < 1 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "usage: hash-variants [-mode drama|mmap|read] [-window MiB] [-populate] [-workers N] FILE...")
		os.Exit(2)
	}
	advice := unix.MADV_SEQUENTIAL
	if *populate {
		a, err := populateAdvice()
		if err != nil {
			fmt.Fprintln(os.Stderr, "hash-variants:", err)
			os.Exit(2)
		}
		advice = a
	}
	hashOne := func(name string) (int64, error) {
		switch *mode {
		case "drama":
			_, n, err := filehash.SHA256(context.Background(), name, nil)
			return n, err
		case "read":
			return hashRead(name)
		}
		return hashMapped(name, int64(*window)<<20, advice)
	}
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	var total atomic.Int64
	var failed atomic.Bool
	names := make(chan string)
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				n, err := hashOne(name)
				if err != nil {
					fmt.Fprintf(os.Stderr, "hash-variants: %s: %v\n", name, err)
					failed.Store(true)
				}
				total.Add(n)
			}
		}()
	}
	for _, name := range flag.Args() {
		names <- name
	}
	close(names)
	wg.Wait()
	elapsed := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	gb := float64(total.Load()) / 1e9
	cpu := time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
	sys := time.Duration(after.Stime.Nano() - before.Stime.Nano())
	variant := *mode
	if *mode == "mmap" {
		variant = fmt.Sprintf("mmap window=%dMiB populate=%v", *window, *populate)
	}
	fmt.Printf("%s workers=%d\t%.0f MiB/s\tcpu %.3f s/GB\tsys %.3f s/GB\n",
		variant, *workers, float64(total.Load())/elapsed.Seconds()/(1<<20), cpu.Seconds()/gb, sys.Seconds()/gb)
	if failed.Load() {
		os.Exit(1)
	}
}

func hashRead(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	h.Sum(nil)
	return n, err
}

func hashMapped(name string, window int64, advice int) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return 0, errors.New("not a non-empty regular file")
	}
	h := sha256.New()
	var done int64
	for done < fi.Size() {
		n := min(window, fi.Size()-done)
		m, err := unix.Mmap(int(f.Fd()), done, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return done, err
		}
		unix.Madvise(m, advice)
		hashSteps(h, m)
		unix.Munmap(m)
		done += n
	}
	h.Sum(nil)
	return done, nil
}

// hashSteps writes m to h in 1 MiB steps, the step of filehash.SHA256.
func hashSteps(h hash.Hash, m []byte) {
	for off := 0; off < len(m); off += 1 << 20 {
		h.Write(m[off:min(off+1<<20, len(m))])
	}
}
