// Names that carry a cluster node (server/common/node.h): "n0-…" ids and "n0-K7QX3P" codes. The
// node part is small letters and digits, the code's own part capitals; a lone server's have none.

// A code as typed ("  N0-k7qx3p ") as the server spells it ("n0-K7QX3P").
export function normalCode(text) {
  const t = text.trim();
  const dash = t.indexOf('-');
  return dash < 0 ? t.toUpperCase() : t.slice(0, dash).toLowerCase() + '-' + t.slice(dash + 1).toUpperCase();
}

// path asked of the node a name belongs to (/n/{node}{path}), for requests whose own address
// does not name it (a class's join); path as it is for a lone server's name.
export function onNode(name, path) {
  const m = /^([a-z][a-z0-9]{0,7})-/.exec(name);
  return m ? `/n/${m[1]}${path}` : path;
}

// A run's address part: "n0-17" in a cluster (run ids are each node's own), 17 alone.
export function runRef(run) {
  return run.node ? `${run.node}-${run.id}` : String(run.id);
}
