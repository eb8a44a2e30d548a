package engine

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestWatchParent(t *testing.T) {
	done := make(chan struct{})
	go func() {
		watchParent(context.Background(), os.Getppid()+1, time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchParent did not notice a parent that is not ours")
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		watchParent(ctx, os.Getppid(), time.Millisecond)
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("watchParent returned while the parent lives")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	<-returned
}

func TestHostPID(t *testing.T) {
	t.Setenv(HostPIDEnv, "4242")
	if hostPID() != 4242 {
		t.Fatalf("hostPID = %d, want 4242 from $%s", hostPID(), HostPIDEnv)
	}
	t.Setenv(HostPIDEnv, "junk")
	if hostPID() != os.Getppid() {
		t.Fatalf("hostPID = %d, want the parent's pid", hostPID())
	}
}
