package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/backends"
)

// complete asks lockbench's completion what it offers, as a shell does,
// and returns the values without cobra's trailing directive line.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, stdout, stderr := capture(t, append([]string{"__complete"}, args...)...)
	if code != exitValid {
		t.Fatalf("__complete %v exited %d: %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	return lines[:len(lines)-1]
}

func TestCompletionValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		// Every backend of the registry, in its order.
		{[]string{"run", "--backend", ""}, strings.Join(backends.Names(), " ")},
		{[]string{"run", "--backend", "re"}, "redis redlock redis-sentinel"},
		{[]string{"run", "--workload", ""}, "counter set"},
		{[]string{"run", "--nemesis", "pause,k"}, "pause,kill-client pause,kill"},
		{[]string{"run", "--nemesis", "pause,p"}, "pause,pause-node pause,power-loss pause,partition"},
		{[]string{"run", "--fence", ""}, "none writes all"},
		{[]string{"run", "--store", ""}, "lockbench etcd postgres"},
		{[]string{"run", "--pg-lock", ""}, "session xact"},
		{[]string{"run", "--target", ""}, "holder random all one minority majority leader"},
		{[]string{"run", "--failpoint", ""}, "section acquired before-delete reply-held"},
		{[]string{"run", "--variant", "cr"}, "create-retry"},
		{[]string{"run", "--nemesis", "r"}, "reply-lost"},
		{[]string{"matrix", "--nemeses", "none,pause+ki"}, "none,pause+kill-client none,pause+kill"},
		{[]string{"run", "--on-lock-error", ""}, "closed open"},
		{[]string{"run", "--variant", "ge"}, "get-del-release"},
		{[]string{"matrix", "--preset", ""}, "mutants"},
		{[]string{"run", "--power-target", ""}, "one majority all"},
		{[]string{"run", "--redis-persistence", "e"}, "everysec"},
		{[]string{"matrix", "--backends", "redis,e"}, "redis,etcd"},
		{[]string{"matrix", "--fences", "none,"}, "none,writes none,all"},
	} {
		if got := strings.Join(complete(t, c.args...), " "); got != c.want {
			t.Errorf("%v: offered %q, want %q", c.args, got, c.want)
		}
	}
}

// check completes the run directories of the results tree, each with its
// verdict as the description.
func TestCompletionRunDirs(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run := filepath.Join(tmp, "results", "redis-counter-pause-fence-none", "20261202T094515.549Z")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join(wd, "..", "..", "report", "testdata", "invalid", "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "test.json"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)
	want := filepath.Join("results", "redis-counter-pause-fence-none", "20261202T094515.549Z") + "\tunchecked"
	for _, args := range [][]string{{"check", ""}, {"check", "results/redis"}, {"run", "--replay", "res"}} {
		if got := complete(t, args...); len(got) != 1 || got[0] != want {
			t.Errorf("%v: offered %q, want %q", args, got, want)
		}
	}
	if got := complete(t, "check", "elsewhere/"); len(got) != 0 {
		t.Errorf("a path outside the tree: offered %q", got)
	}
}
