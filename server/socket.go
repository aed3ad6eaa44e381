package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ListenUnix listens on a Unix-domain socket at path, readable and
// writable by the user only (mode 0600): how an app on a phone talks to a
// bundled shade process without opening a TCP port. The socket is made
// under a private name in a fresh directory beside path, given its mode
// and then linked into place, so no other user can connect in between.
// An existing socket at path that nothing answers on (a crashed server's)
// is replaced; a live one, or anything that is not a socket, is an error.
// Closing the listener removes the socket file (if it is still this one).
func ListenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("server: empty socket path")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("server: %s exists and is not a socket: not replacing it", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("server: %s is in use by a running server", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("server: removing the stale socket %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".shade-sock-")
	if err != nil {
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // Close removes it by its final name
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	// A link, not a rename: it fails rather than replace a socket another
	// server made meanwhile.
	if err := os.Link(tmp, path); err != nil {
		ln.Close()
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("server: %s was created by someone else meanwhile", path)
		}
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("server: socket %s: %w", path, err)
	}
	return &unixListener{UnixListener: ln, path: path, fi: fi}, nil
}

// unixListener removes its socket file when closed.
type unixListener struct {
	*net.UnixListener
	path string
	fi   fs.FileInfo
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		// Only if it is still ours: another server may have replaced it.
		if fi, e := os.Lstat(l.path); e == nil && os.SameFile(fi, l.fi) {
			os.Remove(l.path)
		}
	})
	return err
}

// Addr is the socket's path, not the private name it was made under.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

type unixConnKey struct{}

// markUnixConn notes in a connection's context that it came over a
// Unix-domain socket.
func markUnixConn(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*net.UnixConn); ok {
		return context.WithValue(ctx, unixConnKey{}, true)
	}
	return ctx
}

// overUnixSocket reports whether r came over a Unix-domain socket: no web
// page can reach one, so its Host header needs no check (clients put
// anything there).
func overUnixSocket(r *http.Request) bool {
	v, _ := r.Context().Value(unixConnKey{}).(bool)
	return v
}
