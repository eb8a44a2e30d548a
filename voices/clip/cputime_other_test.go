//go:build !unix

package clip

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
