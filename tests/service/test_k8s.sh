#!/usr/bin/env bash
# deploy/k8s/ checked without a cluster: kubectl reads every manifest and its own API types keep
# every field; the pieces fit (ports, names, probes, volumes, the node ids, the ingress's routing)
# with the Containerfile and each other; and a real grainlabd runs with the manifests' settings.
#
# Why not `kubectl apply --dry-run=client`: it needs an API server even so. Without one, kubectl
# (Debian's 1.20 and later ones alike) stops at discovery ("unable to recognize ...: Get
# http://localhost:8080/api"), with or without --validate=false, and so does `create
# --dry-run=client`; apply also reads the live object to diff against. What runs offline is the
# --local mode of label, set env and set selector: label parses every file as kubectl would send
# it (the objects as JSON for the checks below), and the two `set` decode the StatefulSet and the
# Services into kubectl's compiled API types, which drop any field they do not know (a misspelt
# one) and refuse a wrong type. `kubectl apply --dry-run=server -f deploy/k8s/` against a real
# cluster is the full check (deploy/README.md).
set -u
daemon=${1:?usage: test_k8s.sh grainlabd}
root="$(cd "$(dirname "$0")/../.." && pwd)"
k8s=$root/deploy/k8s
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v kubectl >/dev/null || {
  echo "FAIL no kubectl (scripts/install-deps.sh installs Debian's kubernetes-client)"
  exit 1
}
# never a real cluster's configuration or cache: --local reads neither, and this makes sure
export KUBECONFIG=$tmp/no-kubeconfig HOME=$tmp
kver=$(kubectl version --client -o json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')
if kubectl label --local --dry-run=client -o json -f "$k8s/" grainlab-check=offline \
  >"$tmp/all.json" 2>"$tmp/kerr"; then
  ok "kubectl $kver reads every manifest in deploy/k8s/ (label --local)"
else
  bad "kubectl label --local -f deploy/k8s/: $(cat "$tmp/kerr")"
fi
if kubectl label --local --dry-run=client -o json -f "$k8s/postgres-secret.yaml.template" \
  grainlab-check=offline >"$tmp/secret.json" 2>"$tmp/kerr"; then
  ok "kubectl reads the Secret template"
else
  bad "kubectl label --local -f postgres-secret.yaml.template: $(cat "$tmp/kerr")"
fi
if kubectl set env --local --dry-run=client -o json -f "$k8s/statefulset.yaml" GRAINLAB_CHECK=1 \
  >"$tmp/sts-typed.json" 2>"$tmp/kerr"; then
  ok "kubectl decodes the StatefulSet into its API types (set env --local)"
else
  bad "kubectl set env --local (typed StatefulSet): $(cat "$tmp/kerr")"
fi
# set selector replaces each selector with this one: the comparison below leaves selectors out
if kubectl set selector --local --dry-run=client -o json -f "$k8s/services.yaml" \
  -f "$k8s/postgres.yaml" grainlab-check=1 >"$tmp/svc-typed.json" 2>"$tmp/kerr"; then
  ok "kubectl decodes the Services into its API types (set selector --local)"
else
  bad "kubectl set selector --local (typed Services): $(cat "$tmp/kerr")"
fi

# ---- the pieces fit: python3 on kubectl's JSON (no YAML parser needed) --------------------------
# Writes for the live part: the ConfigMap's grainlabd.conf, the entrypoint's argv for grainlab-1
# (one per line), the ingress's routing table, the public host and the probes' Host.
python3 - "$tmp" "$root" >"$tmp/checks" 2>&1 <<'PY'
import json, os, re, subprocess, sys

tmp, root = sys.argv[1], sys.argv[2]
def say(good, what):
    print(("ok   " if good else "FAIL ") + what)

def items(path):
    """The objects kubectl printed: one JSON document each, or a List (versions differ)."""
    out, dec = [], json.JSONDecoder()
    try:
        text = open(path).read()
        at = 0
        while text[at:].strip():
            d, end = dec.raw_decode(text[at:].lstrip())
            at = len(text) - len(text[at:].lstrip()) + end
            out += d["items"] if d.get("kind") == "List" else [d]
    except (OSError, ValueError) as e:
        say(False, f"{os.path.basename(path)}: {e}")
    return out

objs = items(f"{tmp}/all.json")
by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
def get(kind, name):
    o = by.get((kind, name))
    if o is None:
        say(False, f"no {kind} {name} in deploy/k8s/")
    return o or {}

# -- kubectl's types keep every field we wrote (a field they drop is misspelt or misplaced) --
def missing(mine, typed, where, skip):
    if where in skip:
        return []
    if typed is None:
        return [f"{where} (dropped)"]
    if isinstance(mine, dict):
        if not isinstance(typed, dict):
            return [where]
        return [m for k, v in mine.items()
                for m in missing(v, typed.get(k), f"{where}.{k}", skip)]
    if isinstance(mine, list):
        if not isinstance(typed, list) or len(typed) < len(mine):
            return [where]
        return [m for i, v in enumerate(mine) for m in missing(v, typed[i], f"{where}[{i}]", skip)]
    return [] if mine == typed else [f"{where} ({mine!r} became {typed!r})"]

for typed_file, kinds, skip in (("sts-typed.json", {"StatefulSet"}, set()),
                                ("svc-typed.json", {"Service"}, {".spec.selector"})):
    typed = {o["metadata"]["name"]: o for o in items(f"{tmp}/{typed_file}")}
    for (kind, name), o in sorted(by.items()):
        if kind in kinds:
            lost = missing(o, typed.get(name, {}), "", skip | {".metadata.labels.grainlab-check"})
            say(not lost, f"{kind} {name}: kubectl's API types keep every field"
                + (f"; not: {', '.join(lost)}" if lost else ""))

# -- the Containerfile: what the manifests must agree with --
cf = open(f"{root}/deploy/Containerfile").read().replace("\\\n", " ")
expose = sorted(int(p) for line in re.findall(r"^EXPOSE (.*)$", cf, re.M) for p in line.split())
uid = int(re.search(r"useradd .*--uid (\d+)", cf).group(1))
volume = re.search(r"^VOLUME (\S+)", cf, re.M).group(1)
entry = json.loads(re.search(r"^ENTRYPOINT (\[.*?\])", cf, re.M | re.S).group(1))

# -- the StatefulSet --
sts = get("StatefulSet", "grainlab")
spec = sts.get("spec", {})
n = spec.get("replicas", 0)
pod = spec.get("template", {})
plabels = pod.get("metadata", {}).get("labels", {})
pspec = pod.get("spec", {})
cs = pspec.get("containers", [{}])
c = cs[0]
say(n >= 1 and len(cs) == 1, f"{n} replicas of one container")
sel = spec.get("selector", {}).get("matchLabels", {})
say(sel and sel.items() <= plabels.items(), "the StatefulSet's selector matches its pods' labels")
head = get("Service", spec.get("serviceName", "(none)"))
hs = head.get("spec", {})
say(hs.get("clusterIP") == "None" and hs.get("publishNotReadyAddresses") is True
    and hs.get("selector", {}).items() <= plabels.items() and hs.get("selector"),
    f"serviceName '{spec.get('serviceName')}' is a headless Service over the pods that publishes "
    "nodes not yet ready (peers poll their /readyz)")
say(spec.get("podManagementPolicy") == "Parallel", "pods start in parallel")
say(c.get("image", "").startswith("localhost/") and c.get("imagePullPolicy") == "IfNotPresent"
    and c.get("image", "") in open(f"{root}/deploy/README.md").read(),
    f"image {c.get('image')} is the local one deploy/README.md builds, never pulled "
    f"({c.get('imagePullPolicy')})")
cports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
say(sorted(cports.values()) == expose == [8080, 8081] and cports.get("http") == 8080
    and cports.get("ws") == 8081,
    f"container ports {cports} are the Containerfile's EXPOSE {expose}")

env = {e["name"]: e for e in c.get("env", [])}
say(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    == "metadata.name", "POD_NAME comes from the pod's name (downward API)")
say(env.get("REPLICAS", {}).get("value") == str(n), f"REPLICAS ({env.get('REPLICAS', {}).get('value')}) "
    f"is the replica count ({n})")

# -- the entrypoint: run it for each pod with a stand-in daemon that prints its argv --
cmd = c.get("command", [])
script = cmd[2] if cmd[:2] == ["/bin/sh", "-c"] and len(cmd) == 3 else ""
say(script.count(f"exec {entry[0]} ") == 1, f"the command is a /bin/sh script that execs "
    f"the image's entrypoint {entry[0]}")
stub = f"{tmp}/argv"
with open(stub, "w") as f:
    f.write('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
os.chmod(stub, 0o755)
node_re = re.compile(r"^[a-z][a-z0-9]{0,7}$")  # grainlabd's --node
svc_name, sts_name = spec.get("serviceName", ""), sts.get("metadata", {}).get("name", "")
argvs = {}
for i in range(max(n, 1)):
    r = subprocess.run(["/bin/sh", "-c", script.replace(f"exec {entry[0]} ", f"exec {stub} ")],
                       env={"PATH": "/usr/bin:/bin", "POD_NAME": f"{sts_name}-{i}",
                            "REPLICAS": str(n)}, capture_output=True, text=True)
    a = r.stdout.splitlines()
    argvs[i] = a
    flags = dict(zip(a[::2], a[1::2])) if len(a) % 2 == 0 else {}
    want_peers = ",".join(f"http://{sts_name}-{j}.{svc_name}:8080" for j in range(n) if j != i)
    say(r.returncode == 0 and flags.get("--node") == f"n{i}" and node_re.match(f"n{i}")
        and flags.get("--peers") == want_peers,
        f"{sts_name}-{i} runs as --node {flags.get('--node')} --peers {flags.get('--peers')}"
        + (f" ({r.returncode}: {r.stderr.strip()})" if r.returncode else ""))
r = subprocess.run(["/bin/sh", "-c", script.replace(f"exec {entry[0]} ", f"exec {stub} ")],
                   env={"PATH": "/usr/bin:/bin", "POD_NAME": sts_name, "REPLICAS": str(n)},
                   capture_output=True, text=True)
say(r.returncode == 2 and not r.stdout, f"a pod name without an ordinal stops the pod: "
    f"{r.stderr.strip()!r}")
a1 = argvs.get(1, [])
flags = dict(zip(a1[::2], a1[1::2]))
# the image's entrypoint flags, all kept with the same values
eflags = dict(zip(entry[1::2], entry[2::2]))
say(eflags and all(flags.get(k) == v for k, v in eflags.items()) and flags.get("--bind") == "0.0.0.0",
    "the command keeps the image's entrypoint flags (" + " ".join(sorted(eflags)) + "), bound to "
    "0.0.0.0 for the other pods")
with open(f"{tmp}/argv1", "w") as f:
    f.write("\n".join(a1) + "\n")

# -- probes: the health endpoints, on the HTTP port, with a Host the daemon answers --
def probe(name):
    h = c.get(name, {}).get("httpGet", {})
    port = cports.get(h.get("port"), h.get("port"))
    host = {x["name"]: x["value"] for x in h.get("httpHeaders", [])}.get("Host")
    return h.get("path"), port, host
for name, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                   ("readinessProbe", "/readyz")):
    got = probe(name)
    say(got[:2] == (path, 8080) and got[2], f"{name} is GET {got[0]} on port {got[1]} with Host {got[2]}")
probe_host = probe("readinessProbe")[2]

# -- security: the Containerfile's user, nothing more; a read-only root with every write on a mount --
psc, csc = pspec.get("securityContext", {}), c.get("securityContext", {})
say(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == uid and psc.get("fsGroup") == uid,
    f"runs as uid {psc.get('runAsUser')} (the Containerfile's {uid}), non-root, volume group {psc.get('fsGroup')}")
say(csc.get("allowPrivilegeEscalation") is False and csc.get("readOnlyRootFilesystem") is True
    and csc.get("capabilities", {}).get("drop") == ["ALL"],
    "no privilege escalation, no capabilities, a read-only root file system")
mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pspec.get("volumes", [])}
claims = {t["metadata"]["name"]: t for t in spec.get("volumeClaimTemplates", [])}
say(flags.get("--data-dir") == volume and mounts.get(volume) in claims
    and claims[mounts[volume]]["spec"].get("accessModes") == ["ReadWriteOnce"],
    f"--data-dir {flags.get('--data-dir')} (the Containerfile's VOLUME {volume}) is each pod's own "
    f"volume claim '{mounts.get(volume)}'")
say(env.get("TMPDIR", {}).get("value") == "/tmp" and "emptyDir" in vols.get(mounts.get("/tmp"), {}),
    "TMPDIR=/tmp is a writable emptyDir (SQLite's temporary files)")
say(set(mounts) == {volume, "/tmp", os.path.dirname(flags.get("--config", "/"))},
    f"nothing else is mounted: {sorted(mounts)}")

# -- the configuration: the ConfigMap behind --config --
cfgdir = os.path.dirname(flags.get("--config", "/"))
cmname = vols.get(mounts.get(cfgdir), {}).get("configMap", {}).get("name", "(none)")
cm = get("ConfigMap", cmname)
conf = cm.get("data", {}).get(os.path.basename(flags.get("--config", "")))
say(conf is not None, f"--config {flags.get('--config')} is the ConfigMap {cmname}'s key")
conf = conf or ""
settings = dict(re.match(r"\s*([a-z-]+)\s*=\s*(\S*)", l).groups()
                for l in conf.splitlines() if re.match(r"\s*[a-z-]+\s*=", l))
with open(f"{tmp}/grainlabd.conf", "w") as f:
    # no PostgreSQL here: the record's URL is checked below, the rest runs in a real daemon
    f.write("".join(l + "\n" for l in conf.splitlines() if not re.match(r"\s*results-db\s*=", l)))
say(settings.get("ws-public-port") == "0", "browsers open the stream on the page's origin "
    "(ws-public-port = 0): the ingress routes /ws/")

# -- PostgreSQL: outside, by name; the password only from the Secret --
m = re.match(r"postgresql://([^@/]+)@([^:/]+):(\d+)/\w+$", settings.get("results-db", ""))
pg = get("Service", m.group(2)) if m else {}
say(bool(m) and ":" not in m.group(1) and pg.get("spec", {}).get("type") == "ExternalName"
    and pg["spec"].get("externalName") and any(p["port"] == int(m.group(3)) for p in pg["spec"].get("ports", [])),
    f"results-db {settings.get('results-db')} names an ExternalName Service, on its port, with no password")
secrets = items(f"{tmp}/secret.json")
ref = env.get("PGPASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
say(any(s["kind"] == "Secret" and s["metadata"]["name"] == ref.get("name")
        and ref.get("key") in s.get("stringData", {}) for s in secrets),
    f"PGPASSWORD comes from the Secret {ref.get('name')}/{ref.get('key')} of the template")
say(not any(k == "Secret" for k, _ in by),
    "the Secret template is not applied with the folder (it holds a placeholder)")

# -- the Services a node's requests go to --
anysvc = None
for (kind, name), o in sorted(by.items()):
    s = o.get("spec", {})
    if kind == "Service" and s.get("selector") and s.get("clusterIP") != "None" \
            and "statefulset.kubernetes.io/pod-name" not in s["selector"]:
        anysvc = name
        say(s["selector"].items() <= plabels.items() and not s.get("publishNotReadyAddresses"),
            f"Service {name} is over every pod, only the ready ones (new work)")
def target(svc, port_name):
    """The container port a Service port name ends at, or None."""
    for p in by.get(("Service", svc), {}).get("spec", {}).get("ports", []):
        if p.get("name") == port_name:
            t = p.get("targetPort", p["port"])
            return cports.get(t, t)
    return None
# each pod's Service has the pod's name (grainlab-N)
for i in range(n):
    pod_name = f"{sts_name}-{i}"
    s = by.get(("Service", pod_name), {}).get("spec", {})
    say(s.get("selector", {}).get("statefulset.kubernetes.io/pod-name") == pod_name
        and s["selector"].items() <= {**plabels, "statefulset.kubernetes.io/pod-name": pod_name}.items()
        and s.get("publishNotReadyAddresses") is True
        and (target(pod_name, "http"), target(pod_name, "ws")) == (8080, 8081),
        f"Service {pod_name} is pod {pod_name} alone, ports 8080 and 8081, also while not ready")

# -- the ingress: ingress-nginx's routing, simulated --
ings = [o for (k, _), o in sorted(by.items()) if k == "Ingress"]
hosts = {r.get("host") for i in ings for r in i["spec"].get("rules", [])}
say(len(ings) >= 1 and len(hosts) == 1 and None not in hosts
    and all(i["spec"].get("ingressClassName") == "nginx"
            and i["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/use-regex") == "true"
            for i in ings),
    f"{len(ings)} Ingresses for ingress-nginx, regex paths, one host {sorted(map(str, hosts))}")
host = sorted(map(str, hosts))[0]
# every path of the host, longest first, as case-blind regexes anchored at the start: the first
# that matches wins (ingress-nginx's "Path Priority")
routes = []
for ing in ings:
    for rule in ing["spec"].get("rules", []):
        for p in rule.get("http", {}).get("paths", []):
            b = p.get("backend", {}).get("service", {})
            port = b.get("port", {})
            routes.append((p.get("path", ""), ing["metadata"]["name"], b.get("name"),
                           target(b.get("name"), port.get("name")) if "name" in port else port.get("number"),
                           p.get("pathType")))
say(all(r[4] == "ImplementationSpecific" for r in routes), "every path is ImplementationSpecific (a regex)")
routes.sort(key=lambda r: -len(r[0]))
with open(f"{tmp}/routes.json", "w") as f:
    json.dump(routes, f)
def route(path):
    for r in routes:
        if re.match(r[0], path, re.I):
            return r[1], r[2], r[3]
    return None
sid = "0123456789abcdef"
cases = []
for i in range(n):
    own = f"{sts_name}-{i}"
    cases += [(f"/api/sessions/n{i}-{sid}/params", own, 8080),
              (f"/s/n{i}-{sid}", own, 8080),
              (f"/api/sessions/N{i}-QWERTZ", own, 8080),
              (f"/api/classes/n{i}-{sid}/push", own, 8080),
              (f"/class/n{i}-{sid}", own, 8080),
              (f"/api/runs/n{i}-{sid}/events", own, 8080),
              (f"/n/n{i}/api/sessions", own, 8080),
              (f"/n/n{i}/api/classes/N{i}-QWERTZ/join", own, 8080),
              (f"/ws/sessions/n{i}-{sid}", own, 8081),
              (f"/ws/sessions/N{i}-{sid}", own, 8081),
              (f"/ws/classes/n{i}-{sid}", own, 8081),
              (f"/n/n{i}/metrics", "private", None),
              (f"/n/n{i}/api/admin/backup", "private", None)]
cases += [(p, anysvc, 8080) for p in ("/", "/api/scenes", "/api/runs", "/api/runs?scene=silo",
                                      "/api/sessions", "/api/classes", "/js/session.js", "/join",
                                      f"/api/sessions/n{n}-{sid}", f"/s/n1{sid}", f"/api/sessions/n10-{sid}",
                                      "/n/n10/api/sessions")]
cases += [("/metrics", "private", None), ("/api/admin/backup", "private", None)]
wrong = []
for path, svc, port in cases:
    got = route(path)
    if svc == "private":
        ing = by.get(("Ingress", got[0] if got else ""), {})
        if ing.get("metadata", {}).get("annotations", {}).get(
                "nginx.ingress.kubernetes.io/whitelist-source-range") != "127.0.0.1/32":
            wrong.append(f"{path} -> {got} (public)")
    elif not got or got[1:] != (svc, port):
        wrong.append(f"{path} -> {got}, not {svc}:{port}")
say(not wrong, f"{len(cases)} requests route to their node, any node or nowhere public"
    + (": " + "; ".join(wrong) if wrong else ""))
ann = lambda name: by.get(("Ingress", name), {}).get("metadata", {}).get("annotations", {})
wsing = route(f"/ws/sessions/n0-{sid}")[0] if route(f"/ws/sessions/n0-{sid}") else ""
say(int(ann(wsing).get("nginx.ingress.kubernetes.io/proxy-read-timeout", "0")) >= 3600
    and int(ann(wsing).get("nginx.ingress.kubernetes.io/proxy-send-timeout", "0")) >= 3600
    and ann(wsing).get("nginx.ingress.kubernetes.io/proxy-buffering") == "off",
    f"streams ({wsing}) stay open an hour, unbuffered")
httping = route("/api/scenes")[0] if route("/api/scenes") else ""
say(ann(httping).get("nginx.ingress.kubernetes.io/proxy-body-size") == "16k",
    f"HTTP bodies ({httping}) are limited to 16k as the daemon does")

# -- the daemon answers the names it is reached by --
allowed = settings.get("allowed-hosts", "").split(",")
peer_hosts = sorted({u.split("//")[1].split(":")[0] for a in argvs.values()
                     for u in dict(zip(a[::2], a[1::2])).get("--peers", "").split(",") if u})
need = [host, probe_host] + peer_hosts
say(all(h in allowed for h in need), f"allowed-hosts has the public host, the probes' and the "
    f"peers' names ({', '.join(need)})")
with open(f"{tmp}/hosts", "w") as f:
    f.write(f"{host}\n{probe_host}\n{peer_hosts[0] if peer_hosts else ''}\n")
PY
while IFS= read -r line; do
  case $line in
    "ok   "*) ok "${line#ok   }" ;;
    "FAIL "*) bad "${line#FAIL }" ;;
    *) bad "python: $line" ;;
  esac
done <"$tmp/checks"

# ---- a real daemon with the manifests' settings ---------------------------------------------------
# grainlab-1's own command line (its ports, store and files moved here) and the ConfigMap's
# settings: every flag and setting must be one grainlabd knows, with a value it takes
if [ -s "$tmp/argv1" ] && [ -s "$tmp/hosts" ]; then
  mapfile -t args <"$tmp/argv1"
  for i in "${!args[@]}"; do
    [ "${args[$i]}" = /etc/grainlab/grainlabd.conf ] && args[$i]=$tmp/grainlabd.conf
  done
  { read -r public; read -r probe_host; read -r peer_host; } <"$tmp/hosts"
  "$daemon" --help >"$tmp/help" 2>&1
  grep -q -- '--results-db' "$tmp/help" && ok "grainlabd knows --results-db (the ConfigMap's record)" ||
    bad "grainlabd --help has no --results-db"
  "$daemon" "${args[@]}" --bind 127.0.0.1 --http-port 0 --ws-port 0 --data-dir "$tmp/data" \
    --static-dir "$root/web_client" >"$tmp/out" 2>"$tmp/err" &
  dpid=$!
  for _ in $(seq 400); do
    grep -q '^listening http=[0-9]* ws=[0-9]*$' "$tmp/out" && break
    kill -0 "$dpid" 2>/dev/null || break
    sleep 0.05
  done
  port=$(sed -n 's/^listening http=\([0-9]*\) ws=.*/\1/p' "$tmp/out")
  if [ -z "$port" ]; then
    bad "grainlabd with grainlab-1's flags and the ConfigMap's settings did not start: $(cat "$tmp/err")"
  else
    ok "grainlabd runs with grainlab-1's flags (${args[*]}; then its ports, store and files moved here) and the ConfigMap's settings"
    base="http://127.0.0.1:$port"
    code() { curl -s -o "$tmp/body" -w '%{http_code}' -H "Host: $1" "${@:3}" "$base$2"; }
    [ "$(code "$probe_host" /healthz)" = 200 ] && [ "$(code "$probe_host" /readyz)" = 200 ] &&
      ok "the probes' requests (Host: $probe_host) get 200 from /healthz and /readyz" ||
      bad "probes: $(cat "$tmp/body")"
    [ "$(code "$peer_host:8080" /readyz)" = 200 ] && ok "a peer's poll (Host: $peer_host:8080) is answered" ||
      bad "peer poll: $(cat "$tmp/body")"
    [ "$(code evil.example.org /api/scenes)" = 403 ] && ok "another Host is refused (403): the allow-list is on" ||
      bad "Host evil.example.org: $(cat "$tmp/body")"
    [ "$(code "$public" /api/config)" = 200 ] &&
      [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ws_port"])' "$tmp/body")" = 0 ] &&
      ok "through the public host, the client is told to open the stream on its own origin" ||
      bad "public /api/config: $(cat "$tmp/body")"
    if [ "$(code "$public" /api/sessions -X POST -H 'Content-Type: application/json' \
      --data-binary '{"scene":"pour","params":{"amount":10}}')" = 201 ]; then
      id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/body")
      got=$(python3 - "$tmp/routes.json" "$id" <<'PY'
import json, re, sys
routes, sid = json.load(open(sys.argv[1])), sys.argv[2]
def route(path):
    return next(([r[2], r[3]] for r in routes if re.match(r[0], path, re.I)), None)
print(route(f"/api/sessions/{sid}/params"), route(f"/s/{sid}"), route(f"/ws/sessions/{sid}"))
PY
)
      [ "$got" = "['grainlab-1', 8080] ['grainlab-1', 8080] ['grainlab-1', 8081]" ] &&
        ok "its session $id routes back to grainlab-1 (API, page and stream)" ||
        bad "session $id routes to $got"
    else
      bad "POST /api/sessions through the public host: $(cat "$tmp/body")"
    fi
    kill -TERM "$dpid"
    wait "$dpid"
    dpid=
  fi
else
  bad "no command line or hosts from the manifests: the live check did not run"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
