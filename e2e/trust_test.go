package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A run that cannot mean anything is refused before any container starts:
// with the Docker engine unreachable, reaching for it would exit 255, and
// the results tree, written before the first container, stays empty.
func TestPreflightRefusesBeforeAnyContainer(t *testing.T) {
	for name, args := range map[string][]string{
		"partition on cas":         {"--backend", "cas", "--nemesis", "partition"},
		"pause-node on nolock":     {"--backend", "nolock", "--nemesis", "pause-node"},
		"kill on nolock":           {"--backend", "nolock", "--nemesis", "kill"},
		"clock on etcd":            {"--backend", "etcd", "--nemesis", "clock"},
		"the same fault twice":     {"--nemesis", "pause,kill,pause"},
		"ttl not shorter":          {"--ttl", "5s", "--time-limit", "5s"},
		"fault as long as the run": {"--nemesis", "pause", "--fault-duration", "8s", "--time-limit", "8s"},
	} {
		t.Run(name, func(t *testing.T) {
			results := t.TempDir()
			cmd := exec.Command(binary, append(append([]string{"run"}, args...), "--results", results)...)
			cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 254 {
				t.Fatalf("%v: %v, want exit 254\n%s%s", args, err, stdout.String(), stderr.String())
			}
			if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "bad arguments") {
				t.Errorf("want one line saying why, got %q", stderr.String())
			}
			if entries, _ := os.ReadDir(results); len(entries) > 0 || stdout.Len() > 0 {
				t.Errorf("a run began: %d entries in the results tree, stdout %q", len(entries), stdout.String())
			}
		})
	}
}
