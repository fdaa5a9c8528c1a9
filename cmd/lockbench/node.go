package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/link"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/store"
	"github.com/lockbench/lockbench/workloads"
)

// The commands below run inside the node containers.

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker SPEC|-",
		Short:  "Run one client of the workload from its spec (JSON; - reads it from the first line of standard input), printing its events as JSON lines",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			text := args[0]
			if text == "-" {
				var err error
				if text, err = firstLine(os.Stdin); err != nil {
					return fail(exitUsage, fmt.Errorf("spec: %w", err))
				}
			}
			spec, err := backends.DecodeSpec(text)
			if err != nil {
				return fail(exitUsage, err)
			}
			b, ok := backends.Lookup(spec.Backend)
			if !ok {
				return fail(exitUsage, fmt.Errorf("unknown backend %q", spec.Backend))
			}
			if spec.Link {
				if spec, err = routed(spec); err != nil {
					return fail(exitHarness, err)
				}
			}
			stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer cancel()
			work, err := workloads.ParseWork(spec.Work)
			if err != nil {
				return fail(exitUsage, err)
			}
			think, err := workloads.ParseThink(spec.Think)
			if err != nil {
				return fail(exitUsage, err)
			}
			cfg := workloads.Config{Kind: spec.Workload, Process: spec.Process, Key: spec.Key, Work: work, Think: think,
				AcquireTimeout: spec.AcquireTimeout.D(), OpTimeout: spec.OpTimeout.D(), Epoch: spec.Epoch,
				CheckLease: spec.CheckLease, FailOpen: spec.OnLockError == config.FailOpen,
				Rand: rand.New(rand.NewPCG(uint64(spec.Seed), 0))}
			var mu sync.Mutex
			enc := json.NewEncoder(os.Stdout)
			emit := func(e history.Event) {
				mu.Lock()
				defer mu.Unlock()
				_ = enc.Encode(e)
			}
			var fp locks.Failpoint
			if spec.Failpoints {
				fp = func(point string) bool {
					return nemesis.Hold(point, func(line string) {
						mu.Lock()
						defer mu.Unlock()
						fmt.Println(line)
					})
				}
			}
			cfg.Failpoint = fp
			if n, ok := history.ClientNumber(cfg.Process); ok {
				cfg.ID = int64(n)
			}
			client, err := b.Client(spec, workloads.NewTrace(cfg, emit), fp, rand.New(rand.NewPCG(uint64(spec.Seed), 1)))
			if err != nil {
				return fail(exitHarness, err)
			}
			if client.Lock != nil {
				defer client.Lock.Close()
			}
			cfg.CAS = client.CAS
			var st workloads.Store = store.NewClient(spec.StoreAddr, cfg.OpTimeout)
			if client.Store != nil {
				st = client.Store
			} else if spec.Store != config.DefaultStore {
				return fail(exitUsage, fmt.Errorf("--backend %s does not keep --store %s", spec.Backend, spec.Store))
			}
			workloads.Run(stop, cfg, client.Lock, st, emit)
			return nil
		},
	}
}

// routed starts the client's link proxies and points the spec at them:
// every address it names, and, through Dial, every address its lock
// client learns while it runs.
func routed(spec backends.Spec) (backends.Spec, error) {
	px, err := link.Start(link.APIAddr, spec.RTT.D())
	if err != nil {
		return spec, err
	}
	addrs := make([]string, len(spec.LockAddrs))
	for i, a := range spec.LockAddrs {
		if addrs[i], err = px.Route(link.Lock, a); err != nil {
			return spec, err
		}
	}
	spec.LockAddrs = addrs
	if spec.Store == config.DefaultStore {
		if spec.StoreAddr, err = px.Route(link.Store, spec.StoreAddr); err != nil {
			return spec, err
		}
	}
	spec.Dial = px.Dialer(link.Lock)
	return spec, nil
}

// newLinkCmd shapes the links of the worker in this container, through its
// proxies' API: the nemesis runs it with docker exec.
func newLinkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "link",
		Short:  "Shape this container's client links (set, clear, show)",
		Hidden: true,
	}
	var path string
	var delay time.Duration
	set := &cobra.Command{
		Use:  "set SHAPE",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := link.CheckShape(args[0]); err != nil {
				return fail(exitUsage, err)
			}
			if err := link.CheckPath(path); err != nil {
				return fail(exitUsage, err)
			}
			struck, err := link.Set(link.APIAddr, args[0], path, delay)
			if err != nil {
				return fail(exitHarness, err)
			}
			fmt.Println(strings.Join(struck, " "))
			return nil
		},
	}
	set.Flags().StringVar(&path, "path", link.Both, "links to strike: "+strings.Join(link.Paths, ", "))
	set.Flags().DurationVar(&delay, "delay", time.Second, "the delay of delay and slow-close")
	clear := &cobra.Command{
		Use:  "clear",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := link.Clear(link.APIAddr); err != nil {
				return fail(exitHarness, err)
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:  "show",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			out, err := link.Show(link.APIAddr)
			if err != nil {
				return fail(exitHarness, err)
			}
			fmt.Print(out)
			return nil
		},
	}
	cmd.AddCommand(set, clear, show)
	return cmd
}

func newStoreCmd() *cobra.Command {
	var listen, fence, logPath string
	var epoch int64
	var epochStdin bool
	cmd := &cobra.Command{
		Use:    "store",
		Short:  "Serve the resource store",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			f, err := store.ParseFence(fence)
			if err != nil {
				return fail(exitUsage, err)
			}
			if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
				return fail(exitHarness, fmt.Errorf("store log directory: %w", err))
			}
			// With --epoch-stdin the store listens, and answers its
			// health probe, at once, while the lock service comes up;
			// reads and writes wait until the epoch has been read, which
			// the harness sends before any client has its spec.
			epochKnown := make(chan struct{})
			var srv *store.Server
			var srvErr error
			start := func() {
				defer close(epochKnown)
				if epochStdin {
					var line string
					if line, srvErr = firstLine(os.Stdin); srvErr == nil {
						epoch, srvErr = strconv.ParseInt(line, 10, 64)
					}
					if srvErr != nil {
						srvErr = fail(exitUsage, fmt.Errorf("epoch: %w", srvErr))
						return
					}
				}
				if srv, srvErr = store.NewServer(f, logPath, epoch); srvErr != nil {
					srvErr = fail(exitHarness, srvErr)
				}
			}
			if !epochStdin {
				if start(); srvErr != nil {
					return srvErr
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fail(exitHarness, fmt.Errorf("store listen: %w", err))
			}
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer cancel()
			handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.URL.Path == store.HealthPath {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				<-epochKnown
				if srv == nil {
					http.Error(w, "store not started", http.StatusServiceUnavailable)
					return
				}
				srv.Handler().ServeHTTP(w, req)
			})
			hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
			if epochStdin {
				go func() {
					if start(); srvErr != nil {
						cancel()
					}
				}()
			}
			go func() {
				<-ctx.Done()
				_ = hs.Close()
			}()
			err = hs.Serve(ln)
			select {
			case <-epochKnown:
				if srv != nil {
					srv.Close()
				}
				if srvErr != nil {
					return srvErr
				}
			default:
				// Stopped before it learnt its epoch: nothing was logged.
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fail(exitHarness, fmt.Errorf("store: %w", err))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", ":7000", "address to listen on")
	f.StringVar(&fence, "fence", "none", "fence mode: none, writes, all")
	f.StringVar(&logPath, "log", "/var/lib/lockbench/store.log", "append-only log of every request")
	f.Int64Var(&epoch, "epoch", 0, "the run's start on CLOCK_MONOTONIC, in ns")
	f.BoolVar(&epochStdin, "epoch-stdin", false, "read --epoch from the first line of standard input before listening")
	cmd.MarkFlagsMutuallyExclusive("epoch", "epoch-stdin")
	return cmd
}

// firstLine reads r's first line, without its newline: what the harness
// sends a node it started before the run's epoch was known.
func firstLine(r io.Reader) (string, error) {
	line, err := bufio.NewReaderSize(r, 64*1024).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("read standard input: %w", err)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

func newHealthCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "health ADDR",
		Short:  "Exit 0 when the store at ADDR answers",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := store.NewClient(args[0], time.Second).Healthy(ctx); err != nil {
				return fail(exitHarness, err)
			}
			return nil
		},
	}
}
