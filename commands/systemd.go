package commands

import (
	"context"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/queuehq/queue/app"
)

// notifySystemd sends state ("READY=1", "STOPPING=1", ...) to the socket
// systemd names in NOTIFY_SOCKET (Type=notify); without it, nothing.
func notifySystemd(state string) {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return
	}
	if sock[0] == '@' { // an abstract socket
		sock = "\x00" + sock[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Write([]byte(state))
}

// startWatchdog pings systemd's watchdog (WatchdogSec=) at half its
// interval for as long as the store answers; a hung server gets restarted.
func startWatchdog(ctx context.Context, store app.Store) func() {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return func() {}
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	every := time.Duration(usec) * time.Microsecond / 2
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				pctx, pcancel := context.WithTimeout(ctx, every)
				if store.Ping(pctx) == nil {
					notifySystemd("WATCHDOG=1")
				}
				pcancel()
			}
		}
	}()
	return cancel
}
