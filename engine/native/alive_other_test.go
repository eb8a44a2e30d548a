//go:build !unix

package native_test

// alive is not implemented off Unix: the tests that need it skip there.
func alive(pid int) bool { return false }

// helperMain is the parent-death helper, Unix only.
func helperMain() int { return 1 }
