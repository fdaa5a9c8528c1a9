package clusters

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What goes into the controller comes out again under the same names, and
// a stream naming a path outside the destination is refused.
func TestTarRoundTripAndEscape(t *testing.T) {
	src := t.TempDir()
	in := filepath.Join(src, "exp", "expectations.yaml")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := tarFiles([]string{in}, []string{filepath.Join(src, "out")})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := untar(r, root); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, in))
	if err != nil || string(data) != "rules: []\n" {
		t.Errorf("%s: %q, %v", in, data, err)
	}
	if fi, err := os.Stat(filepath.Join(root, src, "out")); err != nil || !fi.IsDir() {
		t.Errorf("directory not made: %v", err)
	}

	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "../escaped", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	dest := filepath.Join(t.TempDir(), "results")
	if err := untar(&evil, dest); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("an escaping name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "escaped")); err == nil {
		t.Error("a file was written outside the destination")
	}
}
