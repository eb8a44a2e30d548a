package cmdutil

import "bytes"

// The tests of this package cannot import cmdtest, which imports it: these
// are its IOStreams and Factory.

func testStreams() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

func testFactory(ios *IOStreams, env ...string) *Factory {
	m := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		m[env[i]] = env[i+1]
	}
	return &Factory{IO: ios, Global: &Global{Variant: "full"}, Version: "test", Getenv: func(k string) string { return m[k] }}
}
