package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"shade/engine"
	"shade/server"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve -m MODEL.gguf [--alias NAME] [--draft DRAFT.gguf --spec MODE] [--dram-budget 50%] [--policy balanced|ui-first|off] [--host 127.0.0.1] [--port 8080] [--socket PATH] [--cache-mib 256] [--api-key KEY]", stderr)
	modelPath := fs.String("m", "", "model `file` (GGUF), or USER/REPO/FILE.gguf already pulled into the cache")
	sf := addSpecFlags(fs, true)
	bf := addBudgetFlags(fs)
	pf := addPolicyFlag(fs, "off", "elastic policy of background requests at start; POST /v1/shade/policy switches it at run time")
	host := fs.String("host", "127.0.0.1", "address to listen on (only loopback is safe without --api-key)")
	port := fs.Int("port", 8080, "TCP port (0: any free port, printed on stderr)")
	socket := fs.String("socket", "", "listen on a Unix-domain socket at `path` (mode 0600; a stale socket there is replaced; removed on exit), and on TCP only if --host or --port is given too")
	cacheMiB := fs.Int("cache-mib", server.DefaultPrefixCache>>20, "MiB of KV the prefix cache keeps from finished requests, for the next turn of a conversation to start from (0: off)")
	apiKey := fs.String("api-key", os.Getenv("SHADE_API_KEY"), "require \"Authorization: Bearer KEY\" (default: $SHADE_API_KEY)")
	queue := fs.Int("queue", 16, "generation requests waiting or running at once; more get 429")
	ctxSize := fs.Int("ctx", 0, "context size in tokens per request (0: the model's, at most 4096)")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	modelID := fs.String("model-id", "", "model id in the API (default: the file's base name); the same as --alias")
	alias := fs.String("alias", "", "the `name` /v1/models lists and responses carry (llama-server's --alias; default: the file's base name). Requests may name any model: there is one")
	template := fs.String("template", "", "chat template: llama-2, llama-3 or chatml instead of the file's own")
	var allowedHosts, corsOrigins stringList
	fs.Var(&allowedHosts, "allowed-host", "a host `name` requests may address the server by, besides localhost and the address served (repeatable; * allows any)")
	fs.Var(&corsOrigins, "cors-origin", "a web `origin` (e.g. http://localhost:3000) whose pages may call the API from a browser (repeatable; * allows any; default none)")
	drain := fs.Duration("drain", 30*time.Second, "on SIGINT or SIGTERM, how long running requests get to finish before they are ended")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := needModelOnly(fs, pos, *modelPath); err != nil {
		return err
	}
	if *alias != "" {
		if *modelID != "" && *modelID != *alias {
			return fmt.Errorf("--alias %q and --model-id %q both name the model: use one", *alias, *modelID)
		}
		*modelID = *alias
	}
	if *port < 0 || *port > 65535 || *queue < 1 {
		return fmt.Errorf("--port must be in [0, 65535] and --queue at least 1")
	}
	if *cacheMiB < 0 {
		return fmt.Errorf("--cache-mib must be at least 0 (0: no prefix cache), got %d", *cacheMiB)
	}
	tcp := *socket == ""
	fs.Visit(func(f *flag.Flag) { tcp = tcp || f.Name == "port" || f.Name == "host" })
	if *drain <= 0 {
		return fmt.Errorf("--drain must be positive, got %v", *drain)
	}
	for _, o := range corsOrigins {
		if u, err := url.Parse(o); o != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "") {
			return fmt.Errorf("--cors-origin %q is not an origin such as http://localhost:3000 (scheme and host, no path)", o)
		}
	}
	// SIGTERM (service managers, docker stop) drains like Ctrl-C.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if err := bf.check(); err != nil {
		return err
	}
	policy, err := pf.policy()
	if err != nil {
		return err
	}
	// With a draft there is always a governor, so that the policy
	// endpoint can switch background requests to elastic at run time.
	o := engine.Options{Threads: *threads, Draft: *sf.draft, Spec: cfg.Mode, Ctx: *ctxSize, Policy: policy, Switchable: true}
	bf.set(&o)
	e, err := openEngine(ctx, *modelPath, o, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	logger := log.New(stderr, "", log.LstdFlags)
	if net.ParseIP(*host) == nil {
		allowedHosts = append(allowedHosts, *host) // the name it was told to listen on
	}
	opt := server.Options{ModelID: *modelID, APIKey: *apiKey, QueueSize: *queue, Ctx: *ctxSize, Spec: cfg, Log: logger,
		AllowedHosts: allowedHosts, CORSOrigins: corsOrigins, ShutdownDrain: *drain, Elastic: e.Governor,
		PrefixCache: int64(*cacheMiB) << 20}
	if *cacheMiB == 0 {
		opt.PrefixCache = -1
	}
	if *template != "" {
		if opt.Template, err = builtinTemplate(e, *template); err != nil {
			return err
		}
	}
	srv := server.New(e, opt)
	lns, where, err := listeners(tcp, *host, *port, *socket)
	if err != nil {
		srv.Close()
		return err
	}
	if ip := net.ParseIP(*host); tcp && (ip == nil || !ip.IsLoopback()) && *host != "localhost" && *apiKey == "" {
		fmt.Fprintf(stderr, "shade serve: warning: listening on %s without --api-key: anyone who can reach this address can use the model\n", *host)
	}
	if ip := net.ParseIP(*host); tcp && ip != nil && ip.IsUnspecified() {
		fmt.Fprintf(stderr, "shade serve: clients must address it by IP address or localhost; add --allowed-host NAME for each host name they use\n")
	}
	fmt.Fprintf(stderr, "shade serve: %s (chat template %s, speculation %v) on %s — Ctrl-C or SIGTERM stops\n",
		srv.ModelID(), srv.Template().Name(), cfg.Mode, where)
	err = srv.ServeAll(ctx, lns...)
	fmt.Fprintf(stderr, "shade serve: stopped\n")
	return err
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// listeners opens what serve listens on: TCP at host:port if tcp, and the
// Unix-domain socket if path is set; where says it for the log.
func listeners(tcp bool, host string, port int, path string) ([]net.Listener, string, error) {
	var lns []net.Listener
	var where []string
	if tcp {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, "", err
		}
		lns, where = append(lns, ln), append(where, "http://"+ln.Addr().String())
	}
	if path != "" {
		ln, err := server.ListenUnix(path)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, "", err
		}
		lns, where = append(lns, ln), append(where, "unix:"+path)
	}
	return lns, strings.Join(where, " and "), nil
}
