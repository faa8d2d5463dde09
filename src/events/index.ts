export * from './event.js'
export * from './filter.js'
export * from './kinds.js'
export * from './nip42.js'
