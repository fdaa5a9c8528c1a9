package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/store"
	"github.com/lockbench/lockbench/workloads"
)

// The commands below run inside the node containers.

func newWorkerCmd() *cobra.Command {
	var (
		cfg                       workloads.Config
		backend, storeKind, addrs string
		storeAddr                 string
		ttl                       time.Duration
		seed                      int64
	)
	cmd := &cobra.Command{
		Use:    "worker",
		Short:  "Run one client of the workload, printing its events as JSON lines",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer cancel()
			cfg.Rand = rand.New(rand.NewPCG(uint64(seed), 0))
			lockRand := rand.New(rand.NewPCG(uint64(seed), 1))
			lockAddrs := strings.Split(addrs, ",")
			var mu sync.Mutex
			enc := json.NewEncoder(os.Stdout)
			emit := func(e history.Event) {
				mu.Lock()
				defer mu.Unlock()
				_ = enc.Encode(e)
			}
			trace := workloads.NewTrace(cfg, emit)
			var lock locks.Locker
			var etcdLock *locks.Etcd
			switch backend {
			case "redis":
				lock = locks.NewRedis(locks.RedisClient(lockAddrs[0], ttl), locks.RedisConfig{
					Key: cfg.Key, Owner: cfg.Process, TTL: ttl, Retry: 20 * time.Millisecond, Rand: lockRand, Trace: trace})
			case "redis-sentinel":
				lock = locks.NewRedis(locks.SentinelClient("lockbench", lockAddrs, ttl), locks.RedisConfig{
					Key: cfg.Key, Owner: cfg.Process, TTL: ttl, Retry: 20 * time.Millisecond, Rand: lockRand, Trace: trace})
			case "redlock":
				lock = locks.NewRedlock(locks.RedlockConfig{Addrs: lockAddrs, Key: cfg.Key, TTL: ttl,
					Retry: 20 * time.Millisecond, DriftFactor: locks.RedlockDrift, Rand: lockRand, Trace: trace})
			case "etcd":
				l, err := locks.NewEtcd(locks.EtcdConfig{Endpoints: lockAddrs, Key: "/lockbench/lock/" + cfg.Key, TTL: ttl, Trace: trace})
				if err != nil {
					return fail(exitHarness, err)
				}
				lock, etcdLock = l, l
			case "zookeeper":
				lock = locks.NewZooKeeper(locks.ZooKeeperConfig{Servers: lockAddrs, Dir: "/lockbench/lock/" + cfg.Key,
					Owner: cfg.Process, TTL: ttl, Trace: trace})
			case "cas":
				cfg.CAS = true
			case "nolock":
			default:
				return fail(exitUsage, fmt.Errorf("unknown backend %q", backend))
			}
			if lock != nil {
				defer lock.Close()
			}
			var st workloads.Store = store.NewClient(storeAddr, cfg.OpTimeout)
			if storeKind == "etcd" {
				if etcdLock == nil {
					return fail(exitUsage, fmt.Errorf("--store-kind etcd needs --backend etcd"))
				}
				st = store.NewEtcd(etcdLock.Client(), etcdDataPrefix, cfg.Epoch, etcdLock.OwnerCmp)
			}
			if n, ok := history.ClientNumber(cfg.Process); ok {
				cfg.ID = int64(n)
			}
			workloads.Run(stop, cfg, lock, st, emit)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Process, "process", "", "this client's name")
	f.StringVar(&cfg.Kind, "workload", workloads.CounterKind, "counter or set")
	f.StringVar(&backend, "backend", "redis", "lock service")
	f.StringVar(&addrs, "lock-addrs", "redis:6379", "the lock service's addresses, comma separated")
	f.StringVar(&storeKind, "store-kind", "lockbench", "where the counter lives: lockbench or etcd")
	f.StringVar(&storeAddr, "store", "store:7000", "the lockbench store's address")
	f.StringVar(&cfg.Key, "key", "x", "key of the counter and name of the lock")
	f.DurationVar(&ttl, "ttl", 2*time.Second, "lease time to live")
	f.Int64Var(&seed, "seed", 0, "seed of this client's random choices")
	f.Int64Var(&cfg.Epoch, "epoch", 0, "the run's start on CLOCK_MONOTONIC, in ns")
	f.DurationVar(&cfg.WorkMax, "work-max", 200*time.Millisecond, "upper bound of the random work")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", time.Second, "timeout of each store request and release")
	f.DurationVar(&cfg.AcquireTimeout, "acquire-timeout", 10*time.Second, "bound of one wait for the lock")
	f.BoolVar(&cfg.CheckLease, "check-lease", false, "skip the write when the lease is known to be lost")
	return cmd
}

// etcdDataPrefix is where --store etcd keeps the counter.
const etcdDataPrefix = "/lockbench/data"

func newStoreCmd() *cobra.Command {
	var listen, fence, logPath string
	var epoch int64
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
			srv, err := store.NewServer(f, logPath, epoch)
			if err != nil {
				return fail(exitHarness, err)
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fail(exitHarness, fmt.Errorf("store listen: %w", err))
			}
			ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer cancel()
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
			go func() {
				<-ctx.Done()
				_ = hs.Close()
			}()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
	return cmd
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
