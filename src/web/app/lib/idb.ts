/**
 * The app's IndexedDB (one database per origin): the device record (its key, its grant and the
 * fleet it joined), preferences (what was read, the hubs' cursors), the outbox (each event with
 * every hub's answer to it: lib/outbox-record.ts), and the events it has verified and admitted (so
 * a reload shows the chat at once and catches up from its cursor, as a node does). A tiny promise
 * wrapper.
 */
const dbName = 'kith'
const stores = ['device', 'prefs', 'outbox', 'events'] as const
export type Store = (typeof stores)[number]

let opened: Promise<IDBDatabase> | undefined

function open(): Promise<IDBDatabase> {
  opened ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(dbName, 2)
    req.onupgradeneeded = () => {
      for (const s of stores)
        if (!req.result.objectStoreNames.contains(s)) req.result.createObjectStore(s)
    }
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error ?? new Error('IndexedDB is not available'))
  })
  return opened
}

function run<T>(
  store: Store,
  mode: IDBTransactionMode,
  fn: (s: IDBObjectStore) => IDBRequest<T>,
): Promise<T> {
  return open().then(
    (db) =>
      new Promise<T>((resolve, reject) => {
        const tx = db.transaction(store, mode)
        const req = fn(tx.objectStore(store))
        tx.oncomplete = () => resolve(req.result)
        tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'))
        tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
      }),
  )
}

export function idbGet<T>(store: Store, key: string): Promise<T | undefined> {
  return run<unknown>(store, 'readonly', (s) => s.get(key)) as Promise<T | undefined>
}

export function idbPut(store: Store, key: string, value: unknown): Promise<void> {
  return run(store, 'readwrite', (s) => s.put(value, key)).then(() => undefined)
}

export function idbDelete(store: Store, key: string): Promise<void> {
  return run(store, 'readwrite', (s) => s.delete(key)).then(() => undefined)
}

export function idbAll<T>(store: Store): Promise<T[]> {
  return run<unknown[]>(store, 'readonly', (s) => s.getAll()) as Promise<T[]>
}

export function idbClear(store: Store): Promise<void> {
  return run(store, 'readwrite', (s) => s.clear()).then(() => undefined)
}

/** Writes (or, with value undefined, deletes) many keys in one transaction. */
export function idbWriteMany(store: Store, entries: readonly [string, unknown][]): Promise<void> {
  if (entries.length === 0) return Promise.resolve()
  return open().then(
    (db) =>
      new Promise<void>((resolve, reject) => {
        const tx = db.transaction(store, 'readwrite')
        const s = tx.objectStore(store)
        for (const [key, value] of entries) {
          if (value === undefined) s.delete(key)
          else s.put(value, key)
        }
        tx.oncomplete = () => resolve()
        tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'))
        tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
      }),
  )
}
