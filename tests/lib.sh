# Shared by the shell unit tests: TAP-like "ok"/"not ok" lines and a tally.
# Source it, call the checks, end with `summary`.
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $1"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $1"; }

check() { # expected-status description command...
	local want=$1 what=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ]; then
		ok "$what"
	else
		not_ok "$what: exit $rc, want $want"; echo "$out" | sed 's/^/    /'
	fi
	LAST=$out
}

contains() { # description needle: in the last check's output
	if grep -qF -- "$2" <<<"$LAST"; then ok "$1"
	else not_ok "$1: no '$2' in:"; echo "$LAST" | sed 's/^/    /'; fi
}

summary() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
