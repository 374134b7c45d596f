package remote

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"
)

// ClusterConfig finds verifiers through protoactor-go's cluster
// membership, with its automanaged provider (nothing to install): each
// verifier serves its membership on Port (HTTP /_health, on the host of
// its listen address: loopback by default; the provider alone would
// bind every interface), and every member polls Seeds,
// the members' membership addresses. A leader joins as a client: it
// serves no membership and polls Seeds; a verifier that appears there
// is put in service, one that leaves is taken out (its passes in flight
// checked at the leader). etcd, Consul, Kubernetes and ZooKeeper
// providers are protoactor's others (cluster/clusterproviders), one
// constructor away; they are not wired in.
type ClusterConfig struct {
	// Name is the cluster's: leader and verifiers must agree. Empty
	// means DefaultClusterName.
	Name string
	// Port is the membership port a verifier serves (a leader serves
	// none). Required for a verifier.
	Port int
	// Seeds are host:port of the members' membership endpoints.
	Seeds []string
	// Refresh is how often the members are polled. Zero means
	// DefaultClusterRefresh.
	Refresh time.Duration
}

// Cluster defaults.
const (
	DefaultClusterName    = "tpu-verifiers"
	DefaultClusterRefresh = time.Second
)

func (c ClusterConfig) withDefaults() ClusterConfig {
	if c.Name == "" {
		c.Name = DefaultClusterName
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultClusterRefresh
	}
	return c
}

// startCluster starts system's remote as a member of the cluster c
// (member: a verifier, serving the worker's kind; otherwise a client,
// a leader), in place of startRemote's plain remote.
func startCluster(system *actor.ActorSystem, c ClusterConfig, member bool, rcfg *remote.Config, worker *actor.Props) (_ *cluster.Cluster, err error) {
	c = c.withDefaults()
	if member && c.Port <= 0 {
		return nil, fmt.Errorf("remote: a cluster member needs its membership port")
	}
	provider := automanaged.NewWithConfig(c.Refresh, c.Port, c.Seeds...)
	var opts []cluster.ConfigOption
	var e *echo.Echo
	if member {
		opts = append(opts, cluster.WithKinds(cluster.NewKind(ActorName, worker)))
		// The provider serves /_health on 0.0.0.0:Port, every
		// interface. Given a server bound already, on the remote's
		// host, it serves that instead: NewWithTesting's server is used
		// as it is, and echo serves its Listener when one is set.
		if e, err = membershipServer(system, c, rcfg.Host); err != nil {
			return nil, err
		}
		provider = automanaged.NewWithTesting(c.Refresh, c.Port, e, c.Seeds...)
	}
	cl := cluster.New(system, cluster.Configure(c.Name, provider, disthash.New(), rcfg, opts...))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("remote: cluster start: %v", p)
			if e != nil {
				e.Close()
			}
		}
	}()
	if member {
		cl.StartMember()
	} else {
		cl.StartClient()
	}
	return cl, nil
}

// membershipServer returns the automanaged provider's HTTP server for a
// member, listening on host:c.Port already: GET /_health answers the
// member's node (its remote's address, kinds), as the provider's own
// server does.
func membershipServer(system *actor.ActorSystem, c ClusterConfig, host string) (*echo.Echo, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(c.Port)))
	if err != nil {
		return nil, fmt.Errorf("remote: membership port: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Listener = l
	e.GET("/_health", func(ctx echo.Context) error {
		h, p, err := system.GetHostPort()
		if err != nil {
			return err
		}
		return ctx.JSON(http.StatusOK, automanaged.NewNode(c.Name, system.ID, h, p, c.Port, []string{ActorName}))
	})
	return e, nil
}

// topology follows the cluster's members of the worker's kind.
type topology struct {
	x       *Dispatcher
	mu      sync.Mutex
	known   map[string]bool // the verifiers among the members
	started bool            // the dispatcher is there to hear of them
}

// watchTopology hands the verifiers that join and leave the cluster to
// x (Join, Leave), once ready is called: every topology event lists the
// members, and those of the worker's kind are compared with the ones
// known before.
func (x *Dispatcher) watchTopology() *topology {
	t := &topology{x: x, known: map[string]bool{}}
	x.system.EventStream.Subscribe(func(evt any) {
		if ct, ok := evt.(*cluster.ClusterTopology); ok {
			t.update(ct.Members)
		}
	})
	return t
}

// ready tells t the dispatcher runs: the verifiers known so far join.
func (t *topology) ready() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = true
	for a := range t.known {
		t.join(a)
	}
}

func (t *topology) update(members []*cluster.Member) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := map[string]bool{}
	for _, m := range members {
		if slices.Contains(m.Kinds, ActorName) {
			now[m.Address()] = true
		}
	}
	if t.started {
		for a := range now {
			if !t.known[a] {
				t.join(a)
			}
		}
		for a := range t.known {
			if !now[a] {
				t.x.cfg.Logger.Info("remote verifier: left the cluster", "verifier", a)
				t.x.Leave(a)
			}
		}
	}
	t.known = now
}

func (t *topology) join(a string) {
	t.x.cfg.Logger.Info("remote verifier: joined the cluster", "verifier", a)
	t.x.Join(a)
}
