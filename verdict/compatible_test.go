package verdict

import "testing"

func TestCompatible(t *testing.T) {
	saved := compatible
	defer func() { compatible = saved }()
	compatible = "# a comment\n0dd4680aaaa\n\n"
	for v, want := range map[string]bool{
		Version():                         true,
		"v1.0 revision 0dd4680aaaa":       true,
		"(devel) revision 0dd4680aaaa":    true,
		"v1.0 revision 0dd4680aaaa-dirty": false,
		"v1.0 revision 0dd4680":           false,
		"v1.0 revision":                   false,
		"# a comment":                     false,
		"":                                false,
	} {
		if got := Compatible(v); got != want {
			t.Errorf("Compatible(%q) = %v, want %v", v, got, want)
		}
	}
}
