package nemesis

import (
	"context"
	"slices"
	"time"
)

// Env is what one run's faults are built from.
type Env struct {
	Cluster  Cluster
	Topology Topology
	Holders  Holders
	// Target is whom the faults that take --target strike (TargetHolder, …).
	Target string
	// PowerTarget is how many nodes lose power at once (PowerAll, …).
	PowerTarget  string
	RestartDelay time.Duration
	TTL          time.Duration
	// Failpoint, when set, is the point of the clients' code where the
	// faults that strike clients (Kind.Strikes) act.
	Failpoint string
	// Link shapes the link fault.
	Link LinkEnv
}

// Kind is a fault the harness can inject: one file defines it, and one line
// of Kinds registers it.
type Kind struct {
	Name string
	// Needs says what a lock service laid out as t lacks for the fault to
	// act on it ("has no lock-service nodes for kill"), or "" when the fault
	// can act. It reads only the layout a backend declares before anything
	// starts, so that `run` and `matrix` refuse by the same rule.
	Needs func(t Topology) string
	// New builds the fault for one run, once its containers are up.
	New func(ctx context.Context, e Env) Fault
	// NetAdmin is set when the fault sets firewall rules inside the run's
	// containers, which then need the NET_ADMIN capability; NetAdminFor,
	// when set, says whether it does with the shapes asked for.
	NetAdmin    bool
	NetAdminFor func(l LinkEnv) bool
	// Disk is set when the fault needs the service nodes' data
	// directories on the lockbench disk (OnDisk), whose FUSE mount then
	// needs /dev/fuse and the SYS_ADMIN capability in those nodes only.
	Disk bool
	// Outlived is set when a lease outlives a fault shorter than its TTL
	// (a freeze, a cut): such a run can rarely make two holders.
	Outlived bool
	// Strikes is set when the fault acts on one client and can wait for it
	// at a failpoint (--failpoint) instead of taking the holder.
	Strikes bool
	// Point, when set, is the failpoint the fault always strikes at: a
	// lock service whose clients never pass it cannot take the fault.
	Point string
	// Targets are the values of --target the fault takes (ClientTargets,
	// NodeTargets); nil when it picks its targets its own way (a
	// partition's named shapes, power-loss's --power-target).
	Targets []string
	// Service is set when the fault acts on the lock service's nodes or
	// on links to them: its heal leaves a service that may take a while
	// to answer again (a restarted JVM, an ensemble electing a leader),
	// so the nemesis waits for it (Schedule.Healthy) before it counts the
	// fault as over. Faults on clients alone leave the service as it was.
	Service bool
}

// Kinds are the faults this build knows, in the order they are healed:
// frozen and killed nodes come back before firewall rules are flushed in
// them.
var Kinds = []Kind{
	pauseKind,
	killClientKind,
	slowReleaseKind,
	replyLostKind,
	pauseNodeKind,
	killKind,
	powerLossKind,
	clockKind,
	partitionKind,
	failoverKind,
	linkKind,
}

// NeedsNetAdmin reports whether the fault, shaped by l, sets firewall
// rules inside the run's containers.
func (k Kind) NeedsNetAdmin(l LinkEnv) bool {
	if k.NetAdminFor != nil {
		return k.NetAdminFor(l)
	}
	return k.NetAdmin
}

// Names are the faults' names, in the order of Kinds.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

// Lookup finds the fault named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// actsOnService reports whether f is of a kind that acts on the lock
// service (Kind.Service). A fault's name is its kind's, the name the
// history records it by.
func actsOnService(f Fault) bool {
	k, ok := Lookup(f.Name())
	return ok && k.Service
}

// Build makes the faults named, in healing order (that of Kinds); names
// holds no fault for a run without faults.
func Build(ctx context.Context, names []string, e Env) []Fault {
	var faults []Fault
	for _, k := range Kinds {
		if slices.Contains(names, k.Name) {
			faults = append(faults, k.New(ctx, e))
		}
	}
	return faults
}

// ArmsPoints reports whether any fault named in names strikes at a
// failpoint of its own, so that the clients must let the nemesis arm
// their failpoints.
func ArmsPoints(names []string) bool {
	for _, k := range Kinds {
		if k.Point != "" && slices.Contains(names, k.Name) {
			return true
		}
	}
	return false
}

// needsNodes is the need of every fault that acts on the lock service's
// own nodes.
func needsNodes(name string) func(Topology) string {
	return func(t Topology) string {
		if len(t.Service) == 0 {
			return "has no lock-service nodes for " + name
		}
		return ""
	}
}

// needsLock is the need of a fault about the lock a client holds: a
// service with no nodes is a client that takes no lock.
func needsLock(name, lacks string) func(Topology) string {
	return func(t Topology) string {
		if len(t.Service) == 0 {
			return "takes no lock, so there is " + lacks + " for " + name
		}
		return ""
	}
}
