// Names live in the pure core (grants/names.ts: the browser runs them too). This re-export keeps
// node/agent-permissions.ts's import as it is while issue 33 moves that file.
export * from '../grants/names.js'
