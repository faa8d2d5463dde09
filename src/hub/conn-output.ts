import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'

/**
 * What one connection sends, and how much of it its client has not read. A client that leaves
 * more than `maxUnreadBytes` unread (its socket's buffer plus live events held for a REQ still
 * streaming) is cut: the hub must not hold a non-reader's traffic in memory.
 */
export class ConnOutput {
  private corked = false
  /** Live frames held back for REQs whose stored part still streams (req-streams.ts). */
  heldBytes = 0
  /** Set when the connection ends: nothing more is sent. */
  ended = false

  constructor(
    private readonly ws: WebSocket,
    private readonly socket: Socket,
    private readonly maxUnreadBytes: number,
    /**
     * Its connection, whose closeSlow cuts a client that does not read (a close frame could not
     * reach it through the backlog). The object, not a closure: one less allocation a connection.
     */
    private readonly owner: { closeSlow(why: string): void },
  ) {}

  send(message: unknown[]): void {
    this.sendRaw(JSON.stringify(message))
  }

  /**
   * Frames sent in one synchronous run (the OKs of a group commit, a REQ's stored events) leave
   * in one write: the socket is corked on the first send and uncorked on the next tick. That
   * cuts a syscall per frame, a large share of the hub's main-thread time under load.
   */
  sendRaw(frame: string): void {
    if (this.ended || this.ws.readyState !== this.ws.OPEN) return
    if (!this.corked) {
      this.corked = true
      this.socket.cork()
      process.nextTick(() => this.flush())
    }
    this.ws.send(frame)
    this.checkUnread()
  }

  /** Writes what this turn has sent so far now, not at the end of the turn. */
  flush(): void {
    if (!this.corked) return
    this.corked = false
    this.socket.uncork()
  }

  /** Cuts the client once it has more than `maxUnreadBytes` unread. */
  checkUnread(): void {
    if (this.unread > this.maxUnreadBytes)
      this.owner.closeSlow(`more than ${this.maxUnreadBytes} bytes unread`)
  }

  /** Output the client has not read yet: the socket's buffer and live events held for it. */
  get unread(): number {
    return this.ws.bufferedAmount + this.heldBytes
  }

  /** What the socket holds unwritten: a REQ's stored part pauses above its high water. */
  get buffered(): number {
    return this.ws.bufferedAmount
  }
}
