//go:build !linux

package engine

import "github.com/hashicorp/go-hclog"

// setParentDeathSignal does nothing where the OS has no parent-death signal;
// the parent watcher covers it.
func setParentDeathSignal(hclog.Logger) {}
