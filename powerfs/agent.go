package powerfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Socket is where an agent takes its commands, inside its node.
const Socket = "/run/lockbench-powerfs.sock"

// proc is one run of the server.
type proc struct {
	cmd *exec.Cmd
	// exited is closed when the server has exited, with its error in err.
	exited chan struct{}
	err    error
}

// Agent is a node's power supply and disk: it serves a Disk at a mount
// point and runs the server that keeps its data there as its child. A
// power cut kills the child (not the agent, which is the disk), takes
// back what was never fsynced and unmounts the disk; power on mounts it
// again and starts the child.
type Agent struct {
	Disk  *Disk
	Mount string
	// Name tells the mount apart in the mount table (powerfs-NAME).
	Name string
	Cmd  []string
	// Log takes the agent's own lines: the node's log.
	Log io.Writer
	// Socket is where it takes commands (Socket in a node).
	Socket string

	mu  sync.Mutex
	srv *fuse.Server
	// child is the server, nil while the power is off.
	child *proc
}

// Request is one command on the socket: "off", "on" or "sync". Wait,
// for "off", is how long the cut may wait for the server's next fsync.
type Request struct {
	Op   string        `json:"op"`
	Wait time.Duration `json:"wait,omitempty"`
}

// Reply is the agent's answer: what a cut took back, or why it failed.
type Reply struct {
	Error string `json:"error,omitempty"`
	// AtFsync says that the power failed as the server asked for an fsync.
	AtFsync bool    `json:"at_fsync,omitempty"`
	Report  *Report `json:"report,omitempty"`
}

// Run mounts the disk, starts the server and serves commands until the
// server exits on its own (its error is returned) or ctx ends (the server
// is stopped with SIGTERM). The disk is unmounted on the way out.
func (a *Agent) Run(ctx context.Context) error {
	_ = os.Remove(a.Socket)
	l, err := net.Listen("unix", a.Socket)
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	defer l.Close()
	if err := a.on(); err != nil {
		return err
	}
	defer a.unmount()
	go a.serve(l)
	for {
		a.mu.Lock()
		child := a.child
		a.mu.Unlock()
		var exited chan struct{}
		if child != nil {
			exited = child.exited
		}
		select {
		case <-ctx.Done():
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.child != nil {
				_ = syscall.Kill(-a.child.cmd.Process.Pid, syscall.SIGTERM)
				<-a.child.exited
			}
			return nil
		case <-exited:
			a.mu.Lock()
			// A child killed by a power cut is replaced, not mourned.
			gone := a.child == child
			a.mu.Unlock()
			if gone {
				return child.err
			}
		case <-time.After(time.Second):
			// The power may have gone off or come back since: the child
			// to watch is then another one.
		}
	}
}

func (a *Agent) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		a.answer(c)
	}
}

func (a *Agent) answer(c net.Conn) {
	defer c.Close()
	var req Request
	var rep Reply
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err == nil {
		switch req.Op {
		case "off":
			rep, err = a.off(req.Wait)
		case "on":
			err = a.on()
		case "sync":
			err = a.Disk.SyncAll()
			fmt.Fprintf(a.Log, "powerfs: sync: everything on the disk is durable\n")
		default:
			err = fmt.Errorf("unknown command %q", req.Op)
		}
	}
	if err != nil {
		rep.Error = err.Error()
	}
	_ = json.NewEncoder(c).Encode(rep)
}

// off cuts the power: at the server's next fsync if one comes within
// wait, else when wait is over.
func (a *Agent) off(wait time.Duration) (Reply, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.child == nil {
		return Reply{}, errors.New("the power is already off")
	}
	var rep Reply
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-a.Disk.Arm():
			rep.AtFsync = true
		case <-t.C:
		}
		t.Stop()
	}
	a.Disk.Cut()
	_ = syscall.Kill(-a.child.cmd.Process.Pid, syscall.SIGKILL)
	// The killed server cannot exit while the fsync that met the cut
	// waits for its answer.
	a.Disk.Thaw()
	<-a.child.exited
	a.child = nil
	a.unmountLocked()
	r, err := a.Disk.Lose()
	if err != nil {
		return rep, err
	}
	rep.Report = &r
	when := fmt.Sprintf("after %s without an fsync", wait)
	if rep.AtFsync {
		when = "as the server asked for an fsync"
	}
	fmt.Fprintf(a.Log, "powerfs: power cut %s: killed %s; %s\n", when, a.Cmd[0], r)
	return rep, nil
}

// on mounts the disk and starts the server, unless the power is on.
func (a *Agent) on() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.child != nil {
		return nil
	}
	a.Disk.PowerOn()
	if err := os.MkdirAll(a.Mount, 0o700); err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	srv, err := Mount(a.Disk, a.Mount, a.Name)
	if err != nil {
		return fmt.Errorf("powerfs: mount %s: %w", a.Mount, err)
	}
	a.srv = srv
	if err := closeOnExec(); err != nil {
		a.unmountLocked()
		return err
	}
	cmd := exec.Command(a.Cmd[0], a.Cmd[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	// Its own process group, so that the cut kills whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.unmountLocked()
		return fmt.Errorf("powerfs: start %s: %w", strings.Join(a.Cmd, " "), err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	a.child = p
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	fmt.Fprintf(a.Log, "powerfs: power on: %s mounted, %s started\n", a.Mount, a.Cmd[0])
	return nil
}

func (a *Agent) unmount() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unmountLocked()
}

// unmountLocked unmounts the disk; a mount still busy (a shell inside it)
// is detached, so that the next mount is not stacked on it.
func (a *Agent) unmountLocked() {
	if a.srv == nil {
		return
	}
	if err := a.srv.Unmount(); err != nil {
		fmt.Fprintf(a.Log, "powerfs: unmount %s: %v; detaching it\n", a.Mount, err)
		_ = syscall.Unmount(a.Mount, syscall.MNT_DETACH)
	}
	a.srv = nil
}

// Control sends one command to the agent listening on socket and returns
// its reply.
func Control(ctx context.Context, socket string, req Request) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return Reply{}, fmt.Errorf("powerfs agent: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Reply{}, fmt.Errorf("powerfs agent: %w", err)
	}
	var rep Reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return Reply{}, fmt.Errorf("powerfs agent: %w", err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("powerfs agent: %s", rep.Error)
	}
	return rep, nil
}

// closeOnExec keeps every descriptor of the agent from the server. go-fuse
// opens /dev/fuse without O_CLOEXEC: a server holding it would keep the
// connection alive after the agent died, and wait forever in the file
// system call the dead agent never answers.
func closeOnExec() error {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("powerfs: %w", err)
	}
	for _, de := range des {
		if fd, err := strconv.Atoi(de.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
