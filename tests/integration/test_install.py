"""make install and make uninstall into a staging root (DESTDIR), as a user
or a package build runs them: the files and their modes, the installed
binary, the man page written from the binary's own --describe-config (every
option of the table, rendered by groff without a warning), the systemd unit
(systemd-analyze verify), and a config the user changed surviving install
and uninstall. The binary installed is $CELLGATE_BIN (INSTALL_BIN), so make
never rebuilds under the suite. The Debian package is tests/deb/run.sh."""
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ["CELLGATE_BIN"]

# What make install writes under PREFIX=/usr/local: the config in
# /usr/local/etc (Debian's place for a local install's configuration).
USR_LOCAL = {
    "usr/local/bin/cellgate": 0o755,
    "usr/local/share/man/man1/cellgate.1": 0o644,
    "usr/local/etc/cellgate/cellgate.conf": 0o644,
    "usr/local/lib/systemd/system/cellgate.service": 0o644,
}


def make(*args):
    """make -C the checkout, outside the make that runs the suite."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    p = subprocess.run(["make", "--no-print-directory", "-C", REPO, *args,
                        "INSTALL_BIN=" + BIN],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    return p.stdout


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60, **kw)


def files_under(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.stat(p).st_mode & 0o7777
    return out


def options():
    """(name, default) of every option, from --describe-config."""
    text = run(BIN, "--describe-config").stdout
    opts = [re.match(r"(\S+) (.*?)  \(", line).groups()
            for line in text.splitlines() if line and not line.startswith(" ")]
    assert len(opts) > 50
    return opts


def render(page):
    """The page as man shows it, groff's warnings (-ww) apart."""
    p = run("groff", "-man", "-Tutf8", "-ww", page, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert p.returncode == 0, p.stderr
    # Bold and italic as overstrikes; \- as U+2212 and - as U+2010 in UTF-8.
    text = re.sub(r".\x08", "", p.stdout)
    return text.replace("\u2212", "-").replace("\u2010", "-"), p.stderr


def test_install_usr_local_layout(tmp_path):
    out = make("install", "DESTDIR=%s" % tmp_path, "PREFIX=/usr/local")
    assert files_under(tmp_path) == USR_LOCAL
    installed = tmp_path / "usr/local/bin/cellgate"
    with open(BIN, "rb") as a, open(installed, "rb") as b:
        assert a.read() == b.read()
    assert run(installed, "--version").stdout == run(BIN, "--version").stdout
    assert "install: %s/usr/local/etc/cellgate/cellgate.conf" % tmp_path in out

    # The documented config, with a service's data directory.
    conf = (tmp_path / "usr/local/etc/cellgate/cellgate.conf").read_text()
    with open(os.path.join(REPO, "conf/cellgate.conf")) as f:
        shipped = f.read()
    assert conf == shipped.replace("\ndir .\n", "\ndir /var/lib/cellgate\n")
    assert conf != shipped
    p = run(installed, "--test-config", tmp_path / "usr/local/etc/cellgate/cellgate.conf")
    assert (p.returncode, p.stdout) == (0, "cellgate: configuration OK\n")

    unit = (tmp_path / "usr/local/lib/systemd/system/cellgate.service").read_text()
    assert ("\nExecStart=/usr/local/bin/cellgate /usr/local/etc/cellgate/cellgate.conf"
            " --supervised systemd --daemonize no\n") in unit
    assert not re.search(r"@[A-Z]+@", unit)


def test_install_usr_puts_the_config_in_etc(tmp_path):
    make("install", "DESTDIR=%s" % tmp_path, "PREFIX=/usr")
    assert files_under(tmp_path) == {
        "usr/bin/cellgate": 0o755,
        "usr/share/man/man1/cellgate.1": 0o644,
        "etc/cellgate/cellgate.conf": 0o644,
        "usr/lib/systemd/system/cellgate.service": 0o644,
    }
    unit = (tmp_path / "usr/lib/systemd/system/cellgate.service").read_text()
    assert ("\nExecStart=/usr/bin/cellgate /etc/cellgate/cellgate.conf"
            " --supervised systemd --daemonize no\n") in unit
    page, _ = render(tmp_path / "usr/share/man/man1/cellgate.1")
    assert "/etc/cellgate/cellgate.conf" in page


def test_man_page_lists_every_option_with_its_default(tmp_path):
    make("install", "DESTDIR=%s" % tmp_path)
    page, warnings = render(tmp_path / "usr/local/share/man/man1/cellgate.1")
    assert warnings == ""
    heads = re.findall(r"^([A-Z][A-Z ]+)$", page, re.M)
    assert heads == ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS",
                     "EXIT STATUS", "FILES", "SEE ALSO"]
    section = page.split("\nOPTIONS\n")[1].split("\nSIGNALS\n")[0]
    # A tag starts a paragraph; its description goes on below it, indented,
    # or beside it when the tag is short ("hz 10  background task ...").
    tags = re.findall(r"\n\n {7}(\S+) (.*?)(?:\n {14}| {2,})\S", section)
    # Every option, in the table's order, as a config line would set it
    # (a tag wider than the page, client-output-buffer-limit's, man
    # justifies and wraps: its name is checked).
    opts = options()
    assert [t[0] for t in tags] == [o[0] for o in opts]
    assert [t for t, o in zip(tags, opts) if len(" ".join(o)) < 60] == \
        [o for o in opts if len(" ".join(o)) < 60]
    version = run(BIN, "--version").stdout.split()[1][2:]
    assert page.startswith("CELLGATE(1)")
    assert "cellgate %s" % version in page.splitlines()[-1]


def test_man_page_synopsis_is_the_usage_of_help(tmp_path):
    make("install", "DESTDIR=%s" % tmp_path)
    page, _ = render(tmp_path / "usr/local/share/man/man1/cellgate.1")
    synopsis = page.split("\nSYNOPSIS\n")[1].split("\nDESCRIPTION\n")[0]
    usage = run(BIN, "--help").stdout.split("\n\n")[0]
    flags = re.findall(r"(?<![\w-])--?[a-z][a-z-]*", usage)
    assert "--ping-pid" in flags and "--test-config" in flags
    assert re.findall(r"(?<![\w-])--?[a-z][a-z-]*", synopsis) == flags
    for sig in ("SIGTERM", "SIGINT", "SIGHUP"):
        assert sig in page.split("\nSIGNALS\n")[1]


def test_unit_passes_systemd_analyze_verify(tmp_path):
    # A real install (PREFIX, no DESTDIR): verify checks that ExecStart's
    # binary exists and that man finds Documentation=man:cellgate(1).
    prefix = tmp_path / "prefix"
    make("install", "PREFIX=%s" % prefix)
    unit = prefix / "lib/systemd/system/cellgate.service"
    p = run("systemd-analyze", "verify", unit, cwd=tmp_path,
            env=dict(os.environ, MANPATH=str(prefix / "share/man")))
    # Unknown keys and bad values are warnings with exit 0: none allowed.
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    text = unit.read_text()
    for line in ("Type=notify", "User=cellgate", "Group=cellgate",
                 "ExecReload=/bin/kill -HUP $MAINPID", "ProtectSystem=strict",
                 "ReadWritePaths=/var/lib/cellgate", "WorkingDirectory=/var/lib/cellgate",
                 "NoNewPrivileges=yes", "ProtectHome=yes", "PrivateTmp=yes",
                 "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
                 "ExecStart=%s/bin/cellgate %s/etc/cellgate/cellgate.conf "
                 "--supervised systemd --daemonize no" % (prefix, prefix)):
        assert "\n%s\n" % line in text
    # Room for the default maxclients and the 32 fds the daemon keeps.
    nofile = int(re.search(r"^LimitNOFILE=(\d+)$", text, re.M).group(1))
    assert nofile >= int(dict(options())["maxclients"]) + 32


def test_install_keeps_an_existing_config_and_uninstall_a_changed_one(tmp_path):
    conf = tmp_path / "usr/local/etc/cellgate/cellgate.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("port 7000\n")
    out = make("install", "DESTDIR=%s" % tmp_path)
    assert "install: kept %s (it exists)" % conf in out
    assert conf.read_text() == "port 7000\n"

    out = make("uninstall", "DESTDIR=%s" % tmp_path)
    assert "uninstall: kept %s: it differs from the installed default" % conf in out
    assert files_under(tmp_path) == {"usr/local/etc/cellgate/cellgate.conf": 0o644}
    assert conf.read_text() == "port 7000\n"


def test_uninstall_removes_an_unchanged_install(tmp_path):
    make("install", "DESTDIR=%s" % tmp_path)
    out = make("uninstall", "DESTDIR=%s" % tmp_path)
    assert "kept" not in out
    assert files_under(tmp_path) == {}
    assert not (tmp_path / "usr/local/etc/cellgate").exists()
