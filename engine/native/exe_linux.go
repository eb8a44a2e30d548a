package native

// sameExe compares an executable path with what procIdentity returned.
func sameExe(recorded, running string) bool { return recorded == running }
