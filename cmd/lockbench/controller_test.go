package main

import (
	"strings"
	"testing"
)

// The harness goes to the engine's host when DOCKER_HOST names another
// machine or --controller engine asks for it, never from inside a
// controller, and never for the local socket unless asked.
func TestControllerPlacement(t *testing.T) {
	for _, c := range []struct {
		mode, host, inside string
		want               bool
	}{
		{controllerAuto, "", "", false},
		{controllerAuto, "unix:///var/run/docker.sock", "", false},
		{controllerAuto, "tcp://10.0.0.7:2376", "", true},
		{controllerAuto, "ssh://ci@builder", "", true},
		{controllerLocal, "tcp://10.0.0.7:2376", "", false},
		{controllerEngine, "", "", true},
		{controllerEngine, "tcp://10.0.0.7:2376", "tcp://10.0.0.7:2376", false},
	} {
		t.Setenv("DOCKER_HOST", c.host)
		t.Setenv(controllerEnv, c.inside)
		f := controllerFlag{mode: c.mode}
		got, err := f.onEngine()
		if err != nil || got != c.want {
			t.Errorf("--controller %s, DOCKER_HOST %q, inside %q: %v, %v; want %v", c.mode, c.host, c.inside, got, err, c.want)
		}
	}
	t.Setenv(controllerEnv, "")
	if _, err := (&controllerFlag{mode: "elsewhere"}).onEngine(); err == nil {
		t.Error("an unknown --controller was accepted")
	}
}

// Bad shard, parallel and merge arguments are refused in one line, exit
// 254, before Docker is reached.
func TestMatrixShardArgumentsRefused(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", "--shard", "1/2"}, "needs --seed"},
		{[]string{"matrix", "--shard", "0/2", "--seed", "1"}, "want I/N"},
		{[]string{"matrix", "--parallel", "0"}, "--parallel must be at least 1"},
		{[]string{"matrix", "--controller", "elsewhere", "--backends", "cas", "--nemeses", "none", "--fences", "none"}, "--controller"},
		{[]string{"matrix", "merge", empty}, "no matrix.json under"},
		{[]string{"matrix", "merge"}, "requires at least 1 arg"},
	} {
		code, stdout, stderr := capture(t, c.args...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 254 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}
