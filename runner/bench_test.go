package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/workloads"
)

// The benchmarks below start real containers: they measure the harness
// against the floor of what the engine and the service cost anyway.

var (
	binOnce    sync.Once
	benchBin   string
	binErr     error
	benchOnce  sync.Once
	benchImage string
	benchErr   error
)

// benchBinary builds the lockbench binary once.
func benchBinary(b *testing.B) string {
	b.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockbench-bench-")
		if err != nil {
			binErr = err
			return
		}
		benchBin = filepath.Join(dir, "lockbench")
		cmd := exec.Command("go", "build", "-o", benchBin, "../cmd/lockbench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		b.Fatal(binErr)
	}
	return benchBin
}

// benchSetup builds the lockbench binary and its node image once.
func benchSetup(b *testing.B) (*clusters.Engine, string) {
	b.Helper()
	benchBinary(b)
	benchOnce.Do(func() {
		eng, err := clusters.Connect(context.Background())
		if err != nil {
			benchErr = err
			return
		}
		defer eng.Close()
		benchImage, benchErr = images.Ensure(context.Background(), eng.Client, images.Options{
			Binary: benchBin, Method: images.Auto, Mirror: "http://deb.debian.org/debian", Log: io.Discard})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	eng, err := clusters.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	return eng, benchImage
}

func benchConfig(backend string) config.Config {
	cfg := validConfig()
	cfg.Backend, cfg.Nemesis, cfg.Nodes = backend, []string{"none"}, 5
	if err := Validate(&cfg); err != nil {
		panic(err)
	}
	return cfg
}

// BenchmarkBringUp times starting a backend's nodes until they are ready
// (and the whole service healthy, where it has a check) plus tearing them
// down, against the floor of starting and removing the same containers
// without waiting for anything.
func BenchmarkBringUp(b *testing.B) {
	eng, image := benchSetup(b)
	for _, backend := range backends.All {
		cfg := benchConfig(backend.Name())
		layout := backend.Layout(&cfg)
		if len(layout.Services) == 0 {
			continue
		}
		// Built before the clock starts, as a run builds it before its
		// cluster; ours and the floor then start the same containers.
		if _, err := ensureImages(context.Background(), eng, layout.Services, images.Options{
			Method: images.Auto, Mirror: "http://deb.debian.org/debian", Log: io.Discard}); err != nil {
			b.Fatal(err)
		}
		b.Run(backend.Name(), func(b *testing.B) {
			var ours, floor time.Duration
			for i := 0; i < b.N; i++ {
				ours += timeIt(b, func() {
					c := newBenchCluster(b, eng, image)
					r := &run{cfg: cfg, cluster: c}
					if err := r.start(context.Background(), layout.Services); err != nil {
						b.Fatal(err)
					}
					if layout.Ready != nil {
						if _, err := c.WaitReady(context.Background(), layout.Services[0].Node.Name, time.Minute, layout.Ready...); err != nil {
							b.Fatal(err)
						}
					}
					downBench(b, c)
				})
				floor += timeIt(b, func() {
					c := newBenchCluster(b, eng, image)
					var nodes []clusters.Node
					for _, s := range layout.Services {
						nodes = append(nodes, s.Node)
					}
					if err := c.StartAll(context.Background(), nodes); err != nil {
						b.Fatal(err)
					}
					downBench(b, c)
				})
			}
			n := float64(b.N)
			b.ReportMetric(ours.Seconds()*1000/n, "ms/up+down")
			b.ReportMetric(floor.Seconds()*1000/n, "ms/floor")
			b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-floor")
		})
	}
}

func timeIt(b *testing.B, f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func newBenchCluster(b *testing.B, eng *clusters.Engine, image string) *clusters.Cluster {
	c, err := clusters.New(context.Background(), eng, "bench"+newRunID(), image)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func downBench(b *testing.B, c *clusters.Cluster) {
	if err := c.Down(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// runBench runs one whole test as `lockbench run` would.
func runBench(b *testing.B, cfg config.Config) *rundir.Results {
	b.Helper()
	benchSetup(b)
	rep, err := Run(context.Background(), cfg, Options{
		Results: b.TempDir(), Binary: benchBin, ImageMethod: images.Auto,
		Mirror: "http://deb.debian.org/debian", Out: io.Discard,
	})
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// BenchmarkLockCycles measures lock cycles per second of one client of the
// counter workload (no faults, no work in the section) against the floor of
// the same four round trips from another container without the harness's
// recording (SET NX, a store read, a store write, compare-and-delete), and
// reports the bare SET NX / compare-and-delete cycles beside it.
func BenchmarkLockCycles(b *testing.B) {
	eng, image := benchSetup(b)
	const window = 5 * time.Second
	var ours, floor, bare []float64
	for i := 0; i < b.N; i++ {
		cfg := benchConfig(backends.Redis{}.Name())
		// No work in the section: benchConfig has already turned the
		// default --work-max into --work, so the work is set here.
		cfg.Concurrency, cfg.Work, cfg.TimeLimit = 1, workloads.UniformWork(0), config.Duration(window)
		rep := runBench(b, cfg)
		for _, r := range rep.Checkers {
			if r.Checker == "progress" {
				ours = append(ours, float64(r.Counts["sections"])/window.Seconds())
			}
		}

		c := newBenchCluster(b, eng, image)
		r := &run{cfg: cfg, cluster: c}
		services := append(backends.Redis{}.Layout(&cfg).Services, backends.Service{
			Node: clusters.Node{Name: "store", Role: "store", Cmd: []string{
				"lockbench", "store", "--listen", ":7000", "--fence", "none", "--log", storeLogPath}},
			Probe: []string{"lockbench", "health", "127.0.0.1:7000"},
		})
		if err := r.start(context.Background(), services); err != nil {
			b.Fatal(err)
		}
		for _, f := range []struct {
			into *[]float64
			args []string
		}{{&floor, []string{"--store", storeAddr}}, {&bare, nil}} {
			name := fmt.Sprintf("floor%d", len(*f.into)*2+len(f.args))
			if err := c.Start(context.Background(), clusters.Node{Name: name, Role: "client",
				Cmd: append([]string{"lockbench", "rawlock", "--addr", "redis:6379", "--duration", window.String()}, f.args...)}); err != nil {
				b.Fatal(err)
			}
			var out strings.Builder
			if err := c.Lines(context.Background(), name, io.Discard, func(l []byte) { out.Write(l) }); err != nil {
				b.Fatal(err)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
			if err != nil {
				b.Fatalf("floor printed %q", out.String())
			}
			*f.into = append(*f.into, v)
		}
		downBench(b, c)
	}
	b.ReportMetric(median(ours), "cycles/s")
	b.ReportMetric(median(floor), "floor-cycles/s")
	b.ReportMetric(median(bare), "bare-cycles/s")
	b.ReportMetric(median(ours)/median(floor), "of-floor")
}

// BenchmarkTimeToFirstAnomaly runs the unfenced Redis pause case and
// measures when the first stale write was accepted, against the floor of
// one TTL after the first pause began: the lease cannot expire sooner.
// Run it with -benchtime=10x for the median of ten runs.
func BenchmarkTimeToFirstAnomaly(b *testing.B) {
	var first, floors []float64
	missed := 0
	for i := 0; i < b.N; i++ {
		cfg := benchConfig(backends.Redis{}.Name())
		cfg.Nemesis, cfg.TimeLimit, cfg.Seed = []string{"pause"}, config.Duration(20*time.Second), int64(100+i)
		rep := runBench(b, cfg)
		events, err := history.DecodeFile(filepath.Join(rep.Dir, rundir.HistoryFile))
		if err != nil {
			b.Fatal(err)
		}
		var pauseAt int64 = -1
		for _, e := range events {
			if e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Start {
				pauseAt = e.Time
				break
			}
		}
		anomalyAt := int64(-1)
		for _, r := range rep.Checkers {
			for _, a := range r.Anomalies {
				if r.Checker == "fence" && a.Kind == "stale-write-accepted" && (anomalyAt < 0 || a.Time < anomalyAt) {
					anomalyAt = a.Time
				}
			}
		}
		if pauseAt < 0 || anomalyAt < 0 || rep.Verdict != checkers.Invalid {
			missed++
			continue
		}
		first = append(first, float64(anomalyAt)/1e9)
		floors = append(floors, float64(pauseAt+int64(cfg.TTL))/1e9)
	}
	if len(first) == 0 {
		b.Fatalf("no anomaly in %d runs", b.N)
	}
	b.ReportMetric(median(first), "s-first-anomaly")
	b.ReportMetric(median(floors), "s-floor")
	b.ReportMetric(median(first)/median(floors), "x-floor")
	b.ReportMetric(float64(b.N-missed)/float64(b.N), "detected")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRunOverhead times whole runs without faults and reports what
// they cost beyond their time limit, phase by phase, against the floor of
// starting and removing the same containers (the services, the store, the
// clients) without waiting for anything.
func BenchmarkRunOverhead(b *testing.B) {
	eng, image := benchSetup(b)
	const limit = 10 * time.Second
	for _, name := range []string{backends.Redis{}.Name(), "redlock", "etcd"} {
		b.Run(name, func(b *testing.B) {
			cfg := benchConfig(name)
			cfg.TimeLimit = config.Duration(limit)
			phases := map[string]time.Duration{}
			var order []string
			var over, floor time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				rep, err := Run(context.Background(), cfg, Options{
					Results: b.TempDir(), Binary: benchBin, ImageMethod: images.Auto,
					Mirror: "http://deb.debian.org/debian", Out: io.Discard,
					Phase: func(p string, d time.Duration) {
						if _, ok := phases[p]; !ok {
							order = append(order, p)
						}
						phases[p] += d
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Verdict != checkers.Valid {
					b.Fatalf("a run without faults judged %s", rep.Verdict)
				}
				over += time.Since(start) - limit

				floor += timeIt(b, func() {
					c := newBenchCluster(b, eng, image)
					b, _ := backends.Lookup(name)
					var nodes []clusters.Node
					for _, s := range b.Layout(&cfg).Services {
						nodes = append(nodes, s.Node)
					}
					idle := []string{"sleep", "3600"}
					nodes = append(nodes, clusters.Node{Name: "store", Role: "store", Cmd: idle})
					for k := 1; k <= cfg.Concurrency; k++ {
						nodes = append(nodes, clusters.Node{Name: fmt.Sprintf("c%d", k), Role: "client", Cmd: idle})
					}
					if err := c.StartAll(context.Background(), nodes); err != nil {
						panic(err)
					}
					if err := c.Down(context.Background()); err != nil {
						panic(err)
					}
				})
			}
			n := float64(b.N)
			b.ReportMetric(over.Seconds()*1000/n, "ms/overhead")
			b.ReportMetric(floor.Seconds()*1000/n, "ms/floor")
			b.ReportMetric(over.Seconds()/floor.Seconds(), "x-floor")
			for _, p := range order {
				if p == "time limit" {
					// The time limit itself, less what the run's
					// clock counts in it beyond the limit.
					b.ReportMetric((phases[p].Seconds()-limit.Seconds()*n)*1000/n, "ms-past-"+strings.ReplaceAll(p, " ", "-"))
					continue
				}
				b.ReportMetric(phases[p].Seconds()*1000/n, "ms-"+strings.ReplaceAll(p, " ", "-"))
			}
		})
	}
}

// BenchmarkEtcdBringUpVsElection times the etcd bring-up (three members
// in containers, started as a run starts them, until all are listed and
// agree on a leader) against the floor of etcd's own first election: three
// bare members of the same binary on this machine, with the same flags,
// until the same health check passes. Both clocks stop at the leader: the
// removal of the containers (and the killing of the processes) is
// teardown, not bring-up, and is reported beside them.
func BenchmarkEtcdBringUpVsElection(b *testing.B) {
	eng, image := benchSetup(b)
	cfg := benchConfig("etcd")
	be, _ := backends.Lookup("etcd")
	layout := be.Layout(&cfg)
	var ours, floor, down time.Duration
	for i := 0; i < b.N; i++ {
		c := newBenchCluster(b, eng, image)
		ours += timeIt(b, func() {
			r := &run{cfg: cfg, cluster: c}
			if err := r.start(context.Background(), layout.Services); err != nil {
				b.Fatal(err)
			}
			if _, err := c.WaitReady(context.Background(), layout.Services[0].Node.Name, time.Minute, layout.Ready...); err != nil {
				b.Fatal(err)
			}
		})
		down += timeIt(b, func() { downBench(b, c) })
		floor += bareEtcdElection(b)
	}
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()*1000/n, "ms/up")
	b.ReportMetric(floor.Seconds()*1000/n, "ms/election-floor")
	b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-floor")
	b.ReportMetric(down.Seconds()*1000/n, "ms/down")
}

// bareEtcdElection starts three etcd members as processes of this machine,
// polls the health check every 20 ms (as WaitReady does) until they agree
// on a leader, kills them, and returns how long they took to agree.
func bareEtcdElection(b *testing.B) time.Duration {
	dir := b.TempDir()
	ports := freePorts(b, 6)
	var peers, clients []string
	for m := range 3 {
		peers = append(peers, fmt.Sprintf("m%d=http://127.0.0.1:%d", m, ports[2*m+1]))
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", ports[2*m]))
	}
	var procs []*exec.Cmd
	start := time.Now()
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()
	for m := range 3 {
		cmd := exec.Command(benchBin, "etcd", "--name", fmt.Sprintf("m%d", m), "--data-dir", filepath.Join(dir, fmt.Sprint(m)),
			"--listen-client-urls", "http://"+clients[m], "--advertise-client-urls", "http://"+clients[m],
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2*m+1]),
			"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2*m+1]),
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "lockbench",
			"--unsafe-no-fsync", "--log-level", "warn")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	deadline := time.Now().Add(time.Minute)
	for exec.Command(benchBin, "etcd-health", "--endpoints", strings.Join(clients, ",")).Run() != nil {
		if time.Now().After(deadline) {
			b.Fatal("bare etcd members elected no leader in a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// freePorts finds n TCP ports free on the loopback address.
func freePorts(b *testing.B, n int) []int {
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
