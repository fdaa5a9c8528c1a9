package runner

import (
	"context"
	"slices"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/nemesis"
)

// caps is what the run's containers may do beyond Docker's defaults: set
// firewall rules in their own network namespace, and only when a fault cuts
// links or makes them lossy.
func (r *run) caps() []string {
	for _, k := range nemesis.Kinds {
		if r.cfg.Has(k.Name) && k.NeedsNetAdmin(r.linkEnv()) {
			return []string{"NET_ADMIN"}
		}
	}
	return nil
}

// onDisk reports whether a fault asked for needs the service's data on
// the lockbench disk.
func (r *run) onDisk() bool {
	for _, k := range nemesis.Kinds {
		if k.Disk && r.cfg.Has(k.Name) {
			return true
		}
	}
	return false
}

// fitForFaults adapts the service's nodes to the faults asked for: the
// capability to cut links; for a clock fault, the servers that read the
// wall clock started under the clock shim with its offset file at zero;
// for a power loss, the data directories served from the lockbench disk,
// whose FUSE mount needs /dev/fuse and SYS_ADMIN in those nodes alone, and
// the lockbench binary, whose agent serves the disk, in nodes whose image
// does not hold it.
func (r *run) fitForFaults(services []backends.Service) []backends.Service {
	services = slices.Clone(services)
	for i := range services {
		n := &services[i].Node
		n.Caps = r.caps()
		if r.cfg.Has(nemesis.ClockFault) && services[i].WallClock {
			env, cmd := nemesis.UnderClock(n.Cmd)
			n.Env, n.Cmd = append(n.Env, env...), cmd
		}
		if dir := services[i].DataDir; dir != "" && r.onDisk() {
			n.Cmd = nemesis.OnDisk(n.Cmd, dir, r.cluster.RunID()+"-"+n.Name)
			n.Caps = append(slices.Clone(n.Caps), "SYS_ADMIN")
			n.Devices = append(n.Devices, "/dev/fuse")
			if services[i].Image != "" {
				// The disk's agent is this binary, which an image of
				// another kind does not hold: that image is built once
				// for every binary, and only these runs need it.
				n.Copy = map[string]string{"/usr/local/bin/lockbench": r.opts.Binary}
			}
		}
	}
	return services
}

// buildFaults makes the faults asked for, in the order they are healed.
func (r *run) buildFaults(ctx context.Context) []nemesis.Fault {
	t := backends.Topology(r.layout)
	t.Clients = r.clients
	if r.cfg.Store == config.DefaultStore {
		t.Store = storeNode
	}
	if lead := r.layout.Leader; lead != nil {
		t.Leader = func(ctx context.Context) (string, error) { return lead(ctx, r.cluster) }
	}
	return nemesis.Build(ctx, r.cfg.Nemesis, nemesis.Env{Cluster: r.cluster, Topology: t, Holders: r.holders,
		Target: r.cfg.PauseTarget, PowerTarget: r.cfg.PowerTarget, RestartDelay: r.cfg.RestartDelay.D(), TTL: r.cfg.TTL.D(), Failpoint: r.cfg.Failpoint,
		Link: r.linkEnv()})
}

// linkEnv is how the run's link fault is shaped.
func (r *run) linkEnv() nemesis.LinkEnv {
	return nemesis.LinkEnv{Shapes: r.cfg.Link, Path: r.cfg.LinkPath, Delay: r.cfg.LinkDelay.D()}
}
