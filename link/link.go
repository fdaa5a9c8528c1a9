// Package link makes a client's links slow or lossy from inside its own
// container: every connection the worker opens to the lock service or to
// the store goes through a proxy of its own (Toxiproxy, run as a library
// in the worker's process), and the nemesis shapes those proxies through
// Toxiproxy's API on the container's loopback (Set, Clear, Show, run by
// `lockbench link` inside the container). The kernels this harness runs on
// often lack netem, so the shapes that need to see a request (delay it,
// deliver it and lose its reply, reset it) are made here, in userspace;
// random packet loss, which needs no more than iptables' statistic match,
// is the nemesis's.
package link

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The shapes a link fault takes (--link).
const (
	// Delay holds each request on its way to the server for the delay,
	// give or take half of it: a write can land after its client gave up
	// on it, and after its lease ended (Kleppmann's delayed packet).
	Delay = "delay"
	// ReplyLost delivers every request and drops every reply, then, when
	// healed, closes the connections it starved: the request was applied,
	// its client never learns it, and no framed stream (gRPC, ZooKeeper's)
	// resumes in the middle of a lost frame.
	ReplyLost = "reply-lost"
	// Reset answers the next request on each connection with a TCP reset
	// where its reply was: the request was delivered, its outcome unknown.
	// (Toxiproxy resets connections opened while the shape is set; one
	// already open is closed without a reset, which its client reads as
	// an end of file: either way the reply never comes.)
	Reset = "reset"
	// SlowClose holds each connection's close from the server for the delay.
	SlowClose = "slow-close"
	// Loss drops packets at random both ways between the client and the
	// path's servers (iptables' statistic match, set by the nemesis).
	Loss = "loss"
)

// Shapes are the values --link takes.
var Shapes = []string{Delay, ReplyLost, Reset, SlowClose, Loss}

// The paths a link fault acts on (--link-path): a client's links to the
// lock service, to the store, or both. A lock service that keeps the
// protected value itself has no store path of its own.
const (
	Lock  = "lock"
	Store = "store"
	Both  = "both"
)

// Paths are the values --link-path takes.
var Paths = []string{Both, Lock, Store}

// APIAddr is where the worker's Toxiproxy API listens: the container's own
// loopback, which only `lockbench link` run inside the container reaches.
const APIAddr = "127.0.0.1:8474"

// faultPrefix names the toxics a fault adds, so that Clear removes them
// and leaves the steady round trip (--rtt) in place.
const faultPrefix = "fault-"

// Proxies are one worker's proxies, one per server it dials.
type Proxies struct {
	// API is where their Toxiproxy API listens.
	API string
	srv *toxiproxy.ApiServer
	rtt time.Duration

	mu       sync.Mutex
	upstream map[string]string // server address → the proxy's listen address
}

// Start serves Toxiproxy's API on api (APIAddr in a worker; a port of 0
// takes a free one); every proxy made later puts rtt on its round trip,
// half each way (0: none).
func Start(api string, rtt time.Duration) (*Proxies, error) {
	// The API's server is Toxiproxy's own, which exits the process when it
	// cannot listen: the port is tried first, so that a taken port is an
	// error of this worker's start, not an exit in the middle of its run.
	l, err := net.Listen("tcp", api)
	if err != nil {
		return nil, fmt.Errorf("link proxies' API: %w", err)
	}
	api = l.Addr().String()
	l.Close()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	host, port, _ := net.SplitHostPort(api)
	go srv.Listen(host, port)
	p := &Proxies{API: api, srv: srv, rtt: rtt, upstream: map[string]string{}}
	// The API answers before any fault is set: the nemesis's first Set
	// must not race the server's start.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", api, time.Second)
		if err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("link proxies' API did not answer: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Route returns where to dial addr on path instead: its proxy's address,
// made on first use.
func (p *Proxies) Route(path, addr string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.upstream[addr]; ok {
		return l, nil
	}
	px := toxiproxy.NewProxy(p.srv, name(path, addr), "127.0.0.1:0", addr)
	if err := p.srv.Collection.Add(px, true); err != nil {
		return "", fmt.Errorf("proxy %s: %w", addr, err)
	}
	if p.rtt > 0 {
		half := p.rtt.Milliseconds() / 2
		for _, stream := range []string{"upstream", "downstream"} {
			t := fmt.Sprintf(`{"name":"rtt-%s","type":"latency","stream":%q,"toxicity":1,"attributes":{"latency":%d}}`, stream, stream, half)
			if _, err := px.Toxics.AddToxicJson(strings.NewReader(t)); err != nil {
				return "", fmt.Errorf("proxy %s: round trip: %w", addr, err)
			}
		}
	}
	p.upstream[addr] = px.Listen
	return px.Listen, nil
}

// Dialer dials through the proxies on path: for clients that learn
// addresses while they run (Sentinel names the primary).
func (p *Proxies) Dialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, err := p.Route(path, addr)
		if err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, to)
	}
}

// name is a proxy's name: its path, then the server it stands for.
func name(path, addr string) string { return path + "-" + addr }

// pathOf is the path a proxy named n is on.
func pathOf(n string) string {
	p, _, _ := strings.Cut(n, "-")
	return p
}

// on reports whether a proxy on path p is struck by a fault on path.
func on(path, p string) bool { return path == Both || path == p }

// ErrNoPath means the client has no proxy on the path asked for.
var ErrNoPath = errors.New("no link on that path")

// CheckShape and CheckPath refuse what --link and --link-path do not take.
func CheckShape(s string) error {
	if !slices.Contains(Shapes, s) {
		return fmt.Errorf("unknown link shape %q (want one of %s)", s, strings.Join(Shapes, ", "))
	}
	return nil
}

// CheckPath: see CheckShape.
func CheckPath(p string) error {
	if !slices.Contains(Paths, p) {
		return fmt.Errorf("unknown link path %q (want one of %s)", p, strings.Join(Paths, ", "))
	}
	return nil
}
