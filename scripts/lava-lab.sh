#!/usr/bin/env bash
# A LAVA lab on this machine, for --via lava:ID: PostgreSQL, lava-server
# (gunicorn, scheduler, publisher), one lava-worker with a qemu device per
# arch, and an HTTP server for the jobs' artifacts, all on 127.0.0.1. No
# systemd: each process is started here and stopped here, by the pid it
# had. Its state (database, logs, pids, token, job output) is in
# $KREPRO_CACHE/lava-lab.
#
#   lava-lab.sh start    bring the lab up (idempotent); prints how to use it
#   lava-lab.sh stop     stop what start started; logs and database stay
#   lava-lab.sh status   which of its processes run
#   lava-lab.sh env      the lab's settings as shell assignments
set -euo pipefail
. "$(dirname "$0")/common.sh"
help_header "${1:-}"
# The command checked before anything is read or started.
case ${1:-} in start | stop | status | env) [ $# -eq 1 ] || usage_die "lava-lab.sh $1 takes no more arguments" ;;
*) usage_die "lava-lab.sh: want start, stop, status or env${1:+, not '$1'} (--help for more)" ;; esac

LAB=$KREPRO_CACHE/lava-lab
SERVER_PORT=${KREPRO_LAB_PORT:-8799}
FILES_PORT=${KREPRO_LAB_FILES_PORT:-8798}
PG_PORT=${KREPRO_LAB_PG_PORT:-55432}
EVENT_PORT=${KREPRO_LAB_EVENT_PORT:-5500}
IDENTITY=${KREPRO_LAB_IDENTITY:-krepro-lab}
WORKER=krepro-worker
LAB_USER=krepro
PG_BIN=/usr/lib/postgresql/15/bin
# Every process the lab runs, in start order (stop goes backwards).
PROCS="postgres gunicorn publisher scheduler worker files"

as_postgres() { (cd / && setpriv --reuid=postgres --regid=postgres --init-groups "$@"); }
pidfile() { echo "$LAB/run/$1.pid"; }

# A process of ours is alive: its pid file names a live process whose
# command line is still the one we started (a pid can be reused).
alive() {
	local f pid
	f=$(pidfile "$1")
	[ -f "$f" ] || return 1
	pid=$(head -1 "$f")
	[ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$(sed -n 2p "$f")"
}

# start_proc NAME MARK CMD...: CMD in a session of its own, its output in
# logs/NAME.log; MARK is a word of its command line (alive() checks it).
start_proc() {
	local name=$1 mark=$2
	shift 2
	alive "$name" && return 0
	setsid "$@" >>"$LAB/logs/$name.log" 2>&1 </dev/null &
	printf '%s\n%s\n' "$!" "$mark" >"$(pidfile "$name")"
}

stop_proc() {
	local name=$1 pid i
	alive "$name" || { rm -f "$(pidfile "$name")"; return 0; }
	pid=$(head -1 "$(pidfile "$name")")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && { log "$name ($pid) did not stop in 10 s: killed"; kill -KILL "$pid"; }
	rm -f "$(pidfile "$name")"
	log "stopped $name ($pid)"
}

# wait_for WHAT SECONDS CMD...: until CMD succeeds.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for i in $(seq $((secs * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "$what did not come up in $secs s; logs: $LAB/logs"
}

secret() { # secret FILE: a random secret kept in FILE
	[ -s "$1" ] || (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1")
	cat "$1"
}

# The database cluster: in the lab's directory when the postgres user can
# reach it; else (a cache under root's 0700 home) in postgres's own home,
# with a link from the lab's directory.
pg_data() {
	if [ -L "$LAB/pg" ] || { [ ! -e "$LAB/pg" ] && ! as_postgres test -x "$LAB"; }; then
		[ -e "$LAB/pg" ] || ln -s /var/lib/postgresql/krepro-lava-lab "$LAB/pg"
		readlink "$LAB/pg"
	else
		echo "$LAB/pg"
	fi
}

start_postgres() {
	local data
	data=$(pg_data)
	if [ ! -f "$data/PG_VERSION" ]; then
		mkdir -p "$data" && chown postgres:postgres "$data" && chmod 700 "$data"
		as_postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth-local=peer \
			--auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >>"$LAB/logs/postgres.log"
	fi
	# The socket in the cluster's directory: the machine's own cluster
	# (Debian's, /var/run/postgresql) is left alone.
	start_proc postgres "$data" setpriv --reuid=postgres --regid=postgres --init-groups \
		"$PG_BIN/postgres" -D "$data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
		-k "$data"
	wait_for PostgreSQL 30 "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"
	local pw
	pw=$(secret "$LAB/db-password")
	as_postgres psql -q -h "$data" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 >/dev/null <<EOF
SELECT 'CREATE ROLE lavaserver LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lavaserver')\\gexec
ALTER ROLE lavaserver PASSWORD '$pw';
SELECT 'CREATE DATABASE lavaserver OWNER lavaserver ENCODING ''UTF8'' TEMPLATE template0' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'lavaserver')\\gexec
EOF
}

# lava-server's settings, all from the environment: nothing of the lab in
# /etc/lava-server but its worker's env.yaml (below).
lab_env() {
	export DATABASE_URL="postgres://lavaserver:$(secret "$LAB/db-password")@127.0.0.1:$PG_PORT/lavaserver"
	SECRET_KEY=$(secret "$LAB/secret-key")
	export SECRET_KEY
	export ALLOWED_HOSTS=127.0.0.1,localhost
	export LAVA_SETTINGS_MEDIA_ROOT=$LAB/media/
	export LAVA_SETTINGS_DEVICES_PATH=$LAB/devices
	export LAVA_SETTINGS_HEALTH_CHECKS_PATH=$LAB/health-checks
	export LAVA_SETTINGS_DJANGO_LOGFILE=$LAB/logs/django.log
	# The server tells the scheduler of each new job at once, through the
	# publisher, instead of the scheduler's 20 s poll.
	export LAVA_YAML_SETTINGS_EVENT_NOTIFICATION=true
	export LAVA_SETTINGS_EVENT_SOCKET="tcp://127.0.0.1:$EVENT_PORT"
	export LAVA_SETTINGS_INTERNAL_EVENT_SOCKET="ipc://$LAB/run/internal.ipc"
}

manage() { lava-server manage "$@"; }

# The guest's QEMU, as the worker's jobs find it first in their PATH: it
# holds every krepro guest slot and the machine lock (shared) before it
# boots, as krepro's own guests do, so a lab job never runs beside another
# guest or a kernel build (scripts/krepro/lava/lab_guest.py).
qemu_wrappers() {
	local q
	mkdir -p "$LAB/bin"
	for q in qemu-system-x86_64 qemu-system-arm; do
		cat >"$LAB/bin/$q" <<EOF
#!/bin/sh
KREPRO_CACHE='$KREPRO_CACHE' PYTHONPATH='$KREPRO_TOP/scripts' exec /usr/bin/python3 -m krepro.lava.lab_guest /usr/bin/$q "\$@"
EOF
		chmod +x "$LAB/bin/$q"
	done
	# A worker's job environment is read from here only (lava_server/files.py).
	mkdir -p "/etc/lava-server/dispatcher.d/$WORKER"
	cat >"/etc/lava-server/dispatcher.d/$WORKER/env.yaml" <<EOF
# Written by krepro's scripts/lava-lab.sh: its lab's QEMU first.
purge: true
overrides:
  LC_ALL: C.UTF-8
  LANG: C
  PATH: $LAB/bin:/usr/local/bin:/usr/local/sbin:/bin:/usr/bin:/usr/sbin:/sbin
EOF
}

# The superuser, its token, the worker, one qemu device per arch, and
# lavacli's identity: each made only when missing.
populate() {
	local token arch dev
	manage users details "$LAB_USER" >/dev/null 2>&1 ||
		manage users add "$LAB_USER" --superuser --staff --passwd "$(secret "$LAB/password")" >/dev/null
	token=$(secret "$LAB/token")
	manage tokens list --user "$LAB_USER" --csv | grep -qF "$token" ||
		manage tokens add --user "$LAB_USER" --secret "$token" --description krepro >/dev/null
	manage device-types list | grep -qw qemu || manage device-types add qemu >/dev/null
	manage workers details "$WORKER" >/dev/null 2>&1 ||
		manage workers add "$WORKER" --description "krepro's lab worker" >/dev/null
	manage workers details "$WORKER" | awk '$1 == "token" { print $3 }' >"$LAB/worker-token"
	mkdir -p "$LAB/devices"
	for arch in $KREPRO_ARCHES; do
		dev=qemu-$arch-01
		# LAVA's own minimal dictionary; the job's context sets the machine.
		cat >"$LAB/devices/$dev.jinja2" <<'EOF'
{% extends 'qemu.jinja2' %}
{% set netdevice = 'user' %}
{% set no_kvm = True %}
EOF
		manage devices details "$dev" >/dev/null 2>&1 ||
			manage devices add "$dev" --device-type qemu --worker "$WORKER" --tags "$arch" >/dev/null
		manage devices update "$dev" --health GOOD >/dev/null
	done
	lavacli identities add --uri "http://127.0.0.1:$SERVER_PORT/RPC2" --username "$LAB_USER" \
		--token "$token" "$IDENTITY"
}

start() {
	need_pkgs lava-server lava-dispatcher lavacli postgresql python3-yaml qemu-utils curl
	mkdir -p "$LAB/logs" "$LAB/run" "$LAB/media" "$LAB/health-checks" "$LAB/worker" "$LAB/artifacts"
	start_postgres
	lab_env
	manage migrate --noinput >>"$LAB/logs/migrate.log" 2>&1 ||
		die "lava-server manage migrate failed; see $LAB/logs/migrate.log"
	populate
	qemu_wrappers
	start_proc gunicorn "lava_server.wsgi" gunicorn3 lava_server.wsgi --bind "127.0.0.1:$SERVER_PORT" \
		--workers 2 --worker-class eventlet --timeout 120 --log-level info
	start_proc publisher lava-publisher lava-server manage lava-publisher --user root --group root \
		--host 127.0.0.1 --port $((SERVER_PORT + 2)) --level INFO --log-file "$LAB/logs/publisher.log"
	start_proc scheduler lava-scheduler lava-server manage lava-scheduler --user root --group root \
		--event-url "tcp://127.0.0.1:$EVENT_PORT" --level INFO --log-file "$LAB/logs/scheduler.log"
	wait_for lava-server 60 curl -sf "http://127.0.0.1:$SERVER_PORT/api/v0.2/system/version/"
	# Pinging every 2 s, the worker starts a job within 2 s of its scheduling.
	start_proc worker lava-worker lava-worker --name "$WORKER" --url "http://127.0.0.1:$SERVER_PORT/" \
		--ws-url "http://127.0.0.1:$((SERVER_PORT + 2))/ws/" --token-file "$LAB/worker-token" \
		--worker-dir "$LAB/worker" --ping-interval 2 --level INFO --log-file "$LAB/logs/worker.log"
	start_proc files http.server /usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$LAB/artifacts" "$FILES_PORT"
	wait_for "the worker" 60 sh -c "lavacli -i '$IDENTITY' workers show '$WORKER' | grep -q 'state *: Online'"
	wait_for "the artifact server" 10 curl -sf "http://127.0.0.1:$FILES_PORT/"
	log "lab up: identity $IDENTITY, http://127.0.0.1:$SERVER_PORT/; run with"
	log "  ./run-in-qemu.sh --via lava:$IDENTITY --artifacts $LAB/artifacts=http://127.0.0.1:$FILES_PORT ..."
}

stop() {
	local p procs=""
	for p in $PROCS; do procs="$p $procs"; done
	for p in $procs; do stop_proc "$p"; done
}

status() {
	local p rc=0
	for p in $PROCS; do
		if alive "$p"; then
			echo "$p: running ($(head -1 "$(pidfile "$p")"))"
		else
			echo "$p: stopped"
			rc=3
		fi
	done
	return $rc
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) printf 'LAB=%q\nIDENTITY=%q\nARTIFACTS=%q\n' "$LAB" "$IDENTITY" "$LAB/artifacts=http://127.0.0.1:$FILES_PORT" ;;
esac
