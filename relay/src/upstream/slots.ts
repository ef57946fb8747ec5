/**
 * The bound on connections to one upstream. Without one, a burst of N clients opened N connections
 * to core at once (each exchange takes a connection of its own: no pipelining), which can exhaust
 * core's descriptors or its database pool for every site it serves. At most `max` connections are
 * open (connecting, busy or idle); an exchange that finds none free waits in a FIFO queue of at most
 * `maxWaiting`, and past it is refused (503) without contacting core. A connection that closes hands
 * its slot to the first waiter rather than freeing it, so the count never passes `max`, even while
 * a slot changes hands.
 */
export interface SlotLimits {
  /** Connections open to one upstream at most (default 256). */
  maxConnections?: number
  /** Requests waiting for a connection at most, beyond which they are refused with 503 (default 1024). */
  maxQueued?: number
}

export const DEFAULT_MAX_CONNECTIONS = 256
export const DEFAULT_MAX_QUEUED = 1024

/** Refuses limits that would stall every request (0 connections) or none (NaN), when the client is made. */
export function checkLimits({ maxConnections = DEFAULT_MAX_CONNECTIONS, maxQueued = DEFAULT_MAX_QUEUED }: SlotLimits): Required<SlotLimits> {
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new TypeError(`relay maxConnections must be a whole number from 1, not ${String(maxConnections)}`)
  if (!Number.isSafeInteger(maxQueued) || maxQueued < 0) throw new TypeError(`relay maxQueued must be a whole number from 0, not ${String(maxQueued)}`)
  return { maxConnections, maxQueued }
}

export class Slots<Waiter> {
  /** Connections holding a slot. */
  open = 0
  /** Waiters in arrival order; a waiter that left is a hole (null), skipped when reached. */
  private queue: (Waiter | null)[] = []
  private head = 0
  private waiting = 0

  constructor(
    private readonly max: number,
    private readonly maxWaiting: number,
  ) {}

  /** A slot for a new connection, when fewer than `max` are open. */
  take(): boolean {
    if (this.open >= this.max) return false
    this.open++
    return true
  }

  /** Joins the queue; false when it is full. */
  wait(waiter: Waiter): boolean {
    if (this.waiting >= this.maxWaiting) return false
    this.queue.push(waiter)
    this.waiting++
    return true
  }

  /** Each waiter still in the queue, first come first. */
  forEachWaiting(visit: (waiter: Waiter) => void): void {
    for (let at = this.head; at < this.queue.length; at++) {
      const waiter = this.queue[at]
      if (waiter !== null) visit(waiter)
    }
  }

  /** A waiter given up (its client gone, its time up) leaves the queue. */
  leave(waiter: Waiter): void {
    const at = this.queue.indexOf(waiter, this.head)
    if (at === -1) return
    this.queue[at] = null
    if (--this.waiting === 0) this.compact()
  }

  /** The first waiter, out of the queue: it takes a connection that is free now. */
  next(): Waiter | null {
    if (this.waiting === 0) return null
    while (this.head < this.queue.length) {
      const waiter = this.queue[this.head]
      this.queue[this.head++] = null
      if (waiter === null) continue
      if (--this.waiting === 0) this.compact()
      else if (this.head > 1024 && this.head * 2 > this.queue.length) {
        // A queue never empty for long: what was taken is dropped from the front now and then.
        this.queue.splice(0, this.head)
        this.head = 0
      }
      return waiter
    }
    return null
  }

  /** A connection closed: its slot goes to the first waiter (returned, to connect for) or is freed. */
  free(): Waiter | null {
    const waiter = this.next()
    if (waiter === null) this.open--
    return waiter
  }

  /** An empty queue starts over, so that holes left behind never grow the array. */
  private compact(): void {
    this.queue.length = 0
    this.head = 0
  }
}
