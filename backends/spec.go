package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/lockbench/lockbench/config"
)

// Spec is everything one in-container worker runs from. The runner writes
// it, serialized, as the worker's one argument, so that no setting has a
// default of its own on the worker's side.
type Spec struct {
	Process  string `json:"process"`
	Workload string `json:"workload"`
	Backend  string `json:"backend"`
	// LockAddrs are the lock service's addresses (Layout.Addrs).
	LockAddrs []string `json:"lock_addrs,omitempty"`
	// Store is where the protected value lives (config.Stores), StoreAddr
	// the lockbench store's address.
	Store     string          `json:"store"`
	StoreAddr string          `json:"store_addr"`
	Key       string          `json:"key"`
	TTL       config.Duration `json:"ttl"`
	// Seed seeds this client's random choices.
	Seed int64 `json:"seed"`
	// Epoch is the run's start on CLOCK_MONOTONIC, in ns.
	Epoch int64 `json:"epoch"`
	// Work is the distribution of each section's work (config.ParseWork).
	Work string `json:"work"`
	// Think is the distribution of the time between a release and the
	// next acquire (workloads.ParseThink); empty is none.
	Think          string          `json:"think,omitempty"`
	OpTimeout      config.Duration `json:"op_timeout"`
	AcquireTimeout config.Duration `json:"acquire_timeout"`
	CheckLease     bool            `json:"check_lease"`
	// PgLock is the PostgreSQL advisory lock's mode.
	PgLock string `json:"pg_lock,omitempty"`
	// Variant is the lock client's code path (config.Correct or a variant
	// of the backend's).
	Variant string `json:"variant"`
	// Failpoints is set when the nemesis may arm the client's failpoints:
	// only then does the client look for them at each point.
	Failpoints  bool   `json:"failpoints,omitempty"`
	OnLockError string `json:"on_lock_error"`
	// Link routes every connection of the client through proxies of its
	// own (package link), which a link fault shapes; RTT is the steady
	// round trip they put on every link.
	Link bool            `json:"link,omitempty"`
	RTT  config.Duration `json:"rtt,omitempty"`
	// Dial, set in the worker when Link is, dials through those proxies:
	// for clients that learn the addresses they dial while they run
	// (Sentinel names the primary). Nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error) `json:"-"`
}

// Encode serializes the spec for the worker's command line.
func (s Spec) Encode() (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode worker spec: %w", err)
	}
	return string(b), nil
}

// DecodeSpec reads a spec written by Encode.
func DecodeSpec(data string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return s, fmt.Errorf("worker spec: %w", err)
	}
	return s, nil
}
