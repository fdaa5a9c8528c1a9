package runner

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// The committed docker-compose.yml must be what the harness's own
// topologies render: `make compose` brings it up to date.
func TestComposeFileMatchesTopologies(t *testing.T) {
	want, err := Compose()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docker-compose.yml differs from the topologies lockbench runs: run `make compose`")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose not installed: the file's syntax is not checked")
	}
	out, err := exec.Command("docker-compose", "-f", "../docker-compose.yml", "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose rejects the file: %v\n%s", err, out)
	}
}
