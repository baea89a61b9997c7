#!/usr/bin/env bash
# make test-deb: the Debian package that `make deb` built, on this machine.
#
#   bash tests/deb/run.sh build-deb/cellgate_<version>_<arch>.deb
#
# dpkg -i it, check what a user relies on (the binary, the man page, the
# conffile, the cellgate user and /var/lib/cellgate, the enabled unit), run
# the daemon as the unit would, reinstall over a changed config, dpkg -r,
# then dpkg --purge and check nothing is left. Needs root, and refuses to
# start if a cellgate package, user or directory is already here: the purge
# at the end would delete them. Prints "N passed, M failed"; exits 1 on a
# failure.
set -uo pipefail
cd "$(dirname "$0")/../.."

deb=${1:?usage: tests/deb/run.sh path/to/cellgate_VERSION_ARCH.deb}
passed=0
failed=0
log=$(mktemp)
pid=
listener=

ok()   { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
# Run a command with its output in $log, shown when it fails.
quiet() {
    if "$@" >"$log" 2>&1; then return 0; fi
    sed 's/^/    | /' "$log"
    return 1
}
die() { echo "tests/deb/run.sh: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "installs a package: run it as root"
[ -f "$deb" ] || die "no package $deb (make deb builds it)"
for tool in dpkg-deb groff man redis-cli systemd-analyze setpriv; do
    command -v "$tool" >/dev/null || die "$tool is missing (make deps installs it)"
done
if dpkg-query -W -f='${Status}' cellgate 2>/dev/null | grep -q 'installed\|config-files'; then
    die "a cellgate package is installed; this test would purge it (dpkg --purge cellgate first)"
fi
if getent passwd cellgate >/dev/null || getent group cellgate >/dev/null ||
   [ -e /var/lib/cellgate ] || [ -e /etc/cellgate ]; then
    die "a cellgate user, group, /var/lib/cellgate or /etc/cellgate exists; the purge would delete it"
fi

cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    [ -n "$listener" ] && kill "$listener" 2>/dev/null
    dpkg --purge cellgate >/dev/null 2>&1
    rm -f "$log"
}
trap cleanup EXIT

version=$(dpkg-deb -f "$deb" Version)
start=$(date +%s)

# ---- install -------------------------------------------------------------
check "dpkg -i $deb" quiet dpkg -i "$deb"
check "dpkg reports it installed" \
    test "$(dpkg-query -W -f='${Status}' cellgate 2>/dev/null)" = "install ok installed"
check "/usr/bin/cellgate --version runs and says $version" \
    sh -c "/usr/bin/cellgate --version | grep -q '^cellgate v=$version '"
check "man finds cellgate(1)" test "$(man -w cellgate)" = /usr/share/man/man1/cellgate.1.gz
check "cellgate(1) renders without a warning and lists maxclients" sh -c \
    'out=$(zcat /usr/share/man/man1/cellgate.1.gz | groff -man -Tutf8 -ww 2>&1 >/dev/null) &&
     [ -z "$out" ] && zcat /usr/share/man/man1/cellgate.1.gz | grep -q "^.fBmaxclients"'
check "/etc/cellgate/cellgate.conf is a conffile" \
    sh -c "dpkg-query -W -f='\${Conffiles}' cellgate | grep -q '^ /etc/cellgate/cellgate.conf '"
check "the packaged config keeps data in /var/lib/cellgate" \
    grep -qx 'dir /var/lib/cellgate' /etc/cellgate/cellgate.conf
check "the packaged config logs to standard error (the journal)" \
    grep -qx 'logfile ""' /etc/cellgate/cellgate.conf
check "cellgate --test-config accepts the packaged config" \
    quiet /usr/bin/cellgate --test-config /etc/cellgate/cellgate.conf
check "the config is 640 root:cellgate (it may hold passwords)" \
    test "$(stat -c '%a %U:%G' /etc/cellgate/cellgate.conf)" = "640 root:cellgate"
IFS=: read -r _ _ uid _ _ home shell <<<"$(getent passwd cellgate)"
check "a system user cellgate (uid ${uid:-none} < 1000)" test "${uid:-1000}" -lt 1000
check "its home is /var/lib/cellgate and it cannot log in ($shell)" \
    test "$home:${shell##*/}" = "/var/lib/cellgate:nologin"
check "a group cellgate" sh -c "getent group cellgate >/dev/null"
check "/var/lib/cellgate is 750 cellgate:cellgate" \
    test "$(stat -c '%a %U:%G' /var/lib/cellgate 2>/dev/null)" = "750 cellgate:cellgate"

unit=/lib/systemd/system/cellgate.service
check "the unit is in $unit" test -f $unit
check "the unit starts /usr/bin/cellgate /etc/cellgate/cellgate.conf under systemd" \
    grep -qx 'ExecStart=/usr/bin/cellgate /etc/cellgate/cellgate.conf --supervised systemd --daemonize no' $unit
check "the unit is enabled (multi-user.target wants it)" \
    test -L /etc/systemd/system/multi-user.target.wants/cellgate.service
check "systemd-analyze verify accepts the installed unit, silently" \
    sh -c "out=\$(cd / && systemd-analyze verify $unit 2>&1) && [ -z \"\$out\" ] || { echo \"\$out\"; false; }"
if [ -d /run/systemd/system ]; then
    check "systemd started the service" systemctl is-active --quiet cellgate
else
    echo "note systemd is not running here: dpkg -i enabled cellgate.service without starting it"
fi

# ---- the daemon as the unit runs it ----------------------------------------
# The unit's own ExecStart line, as user cellgate (setpriv: no PAM session,
# no process in between), UMask=0077, WorkingDirectory=/var/lib/cellgate, on
# a free port, with NOTIFY_SOCKET naming a socket this script listens on in
# systemd's place (abstract, so user cellgate may send to it).
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
notify="@cellgate-deb-test-$$"
/usr/bin/python3 - "$notify" "$log.notify" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1][1:])
s.settimeout(60)
with open(sys.argv[2], "w") as out:
    print("listening", file=out, flush=True)
    while True:
        msg = s.recv(4096).decode()
        out.write(msg)
        out.flush()
        if "STOPPING=1" in msg:
            break
PY
listener=$!
for _ in $(seq 50); do grep -q listening "$log.notify" 2>/dev/null && break; sleep 0.1; done
read -r -a exec_start <<<"$(sed -n 's/^ExecStart=//p' $unit)"
(umask 077 && cd /var/lib/cellgate &&
 NOTIFY_SOCKET=$notify exec setpriv --reuid=cellgate --regid=cellgate --init-groups -- \
     "${exec_start[@]}" --port "$port") \
    >"$log.daemon" 2>&1 &
pid=$!
up() {
    for _ in $(seq 50); do
        /usr/bin/cellgate --ping "127.0.0.1:$port" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
check "as user cellgate it reads the 640 config and answers PING" up
check "systemd's socket heard READY=1" grep -qx 'READY=1' "$log.notify"
check "CL.THROTTLE through redis-cli" \
    test "$(redis-cli -p "$port" CL.THROTTLE user123 15 30 60 | tr '\n' ' ')" = "0 16 15 -1 2 "
check "SAVE writes the snapshot into /var/lib/cellgate" test "$(redis-cli -p "$port" SAVE)" = OK
check "the snapshot is cellgate's alone (600)" \
    test "$(stat -c '%a %U' /var/lib/cellgate/cellgate.snap 2>/dev/null)" = "600 cellgate"
kill "$pid" 2>/dev/null
wait "$pid"
check "SIGTERM: exit 0" test $? = 0
pid=
wait "$listener"
listener=
check "systemd's socket heard STOPPING=1" grep -qx 'STOPPING=1' "$log.notify"
check "it logged to standard error" grep -q 'Received SIGTERM' "$log.daemon"
rm -f "$log.daemon" "$log.notify"

# ---- reinstall, remove, purge ----------------------------------------------
echo "maxclients 5000" >>/etc/cellgate/cellgate.conf
check "dpkg -i again (a reinstall: postinst runs twice)" quiet dpkg -i "$deb"
check "the reinstall kept the changed config" grep -qx 'maxclients 5000' /etc/cellgate/cellgate.conf
check "dpkg -r cellgate" quiet dpkg -r cellgate
check "removed: no /usr/bin/cellgate, no unit" test ! -e /usr/bin/cellgate -a ! -e $unit
check "removed, not purged: the config, the user and the data stay" \
    test -f /etc/cellgate/cellgate.conf -a -f /var/lib/cellgate/cellgate.snap
check "removed, not purged: the user stays" sh -c "getent passwd cellgate >/dev/null"
check "dpkg --purge cellgate" quiet dpkg --purge cellgate
check "purged: dpkg knows no cellgate" \
    sh -c "! dpkg-query -W -f='\${Status}' cellgate 2>/dev/null | grep -q 'installed\|config-files'"
check "purged: no /etc/cellgate" test ! -e /etc/cellgate
check "purged: no /var/lib/cellgate" test ! -e /var/lib/cellgate
check "purged: no cellgate user" sh -c "! getent passwd cellgate"
check "purged: no cellgate group" sh -c "! getent group cellgate"
check "purged: the unit is no longer enabled" \
    test ! -e /etc/systemd/system/multi-user.target.wants/cellgate.service -a \
         ! -L /etc/systemd/system/multi-user.target.wants/cellgate.service

echo "test-deb: $((  $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
