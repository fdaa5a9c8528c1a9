package e2e

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// engineOverTCP serves the local engine's socket on a loopback TCP port, as
// an engine on another machine would be reached (or through an SSH
// tunnel), and counts the connections made to it.
func engineOverTCP(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				u, err := net.Dial("unix", "/var/run/docker.sock")
				if err != nil {
					return
				}
				defer u.Close()
				// Attach and log streams are hijacked connections: each
				// side's end is passed on as a half-close.
				done := make(chan struct{})
				go func() {
					_, _ = io.Copy(u, c)
					_ = u.(*net.UnixConn).CloseWrite()
					close(done)
				}()
				_, _ = io.Copy(c, u)
				_ = c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return "tcp://" + l.Addr().String(), &conns
}

var controllerLine = regexp.MustCompile(`controller lockbench-controller-([0-9a-f]+): in a container`)

// Through an engine reached over TCP, the harness runs in a container on
// the engine's host (forced with --controller engine; DOCKER_HOST is
// tcp:// here, so auto would choose it too), its results come back to the
// same paths, test.json says where it ran, and nothing is left on the
// engine: a run without faults is valid, an unfenced pause run invalid.
func TestRemoteEngineRunsTheControllerThere(t *testing.T) {
	// Checked here: the runs below start in goroutines, where a skip
	// would end only the goroutine.
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	host, conns := engineOverTCP(t)
	env := []string{"DOCKER_HOST=" + host}
	type want struct {
		args []string
		exit int
	}
	cases := []want{
		{[]string{"--backend", "redis", "--nemesis", "none", "--time-limit", "5s", "--seed", "41"}, 0},
		{[]string{"--backend", "redis", "--nemesis", "pause", "--fence", "none", "--nemesis-interval", "1s", "--time-limit", "10s", "--seed", "7"}, 1},
	}
	rs := make([]result, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = lockbench(t, env, append([]string{"run", "--controller", "engine"}, c.args...)...)
		}()
	}
	wg.Wait()
	for i, r := range rs {
		m := controllerLine.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("case %d: no controller container announced", i)
		}
		assertNothingLeft(t, r.runID)
		assertControllerGone(t, m[1])
		if r.exit != cases[i].exit {
			t.Fatalf("case %d: exit %d, want %d", i, r.exit, cases[i].exit)
		}
		test, _, err := rundir.ReadTest(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		if !test.Controller.OnEngine || test.Controller.Engine != host || test.End == nil {
			t.Errorf("case %d: test.json says the controller ran %+v (end %v), want on the engine reached at %s", i, test.Controller, test.End, host)
		}
		inTimeOrder(t, r.dir)
		// The caller, not the controller, recorded the run that came
		// back, at its path here.
		abs, err := filepath.Abs(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		gs := compareJSON(t, "--catalog", filepath.Join(filepath.Dir(filepath.Dir(abs)), catalog.File))
		if len(gs) != 1 || gs[0].Runs != 1 || len(gs[0].RunsAt) != 1 || gs[0].RunsAt[0] != abs {
			t.Errorf("case %d: the results root's catalog holds %+v, want the one run at %s", i, gs, abs)
		}
	}
	if conns.Load() == 0 {
		t.Fatal("nothing went through the TCP endpoint")
	}
	// The pause reached a holder, whose stale write the store accepted.
	rep := readReport(t, rs[1].dir)
	paused := pausedClients(t, rs[1].dir)
	fence := checker(t, rep, "fence")
	stale := 0
	for _, a := range fence.Anomalies {
		if a.Kind == "stale-write-accepted" && len(a.Clients) > 0 && paused[a.Clients[0]] {
			stale++
		}
	}
	if fence.Valid != checkers.Invalid || stale == 0 {
		t.Errorf("fence %s with %d stale writes of paused clients (paused: %v)", fence.Valid, stale, paused)
	}
	events, err := history.DecodeFile(rs[1].dir + "/" + rundir.HistoryFile)
	if err != nil {
		t.Fatal(err)
	}
	if events[len(events)-1].Time <= 0 {
		t.Error("history times do not grow from the run's start")
	}
}

// assertControllerGone fails if the controller container labelled id is
// still on the engine.
func assertControllerGone(t *testing.T, id string) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost(client.DefaultDockerHost), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "lockbench="+id))})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) > 0 {
		t.Errorf("controller %s left %d containers", id, len(cs))
	}
}
