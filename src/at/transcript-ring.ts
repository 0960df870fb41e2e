/**
 * The last N lines that crossed a channel, both ways, oldest first: a ring that overwrites its oldest entry once full
 * (the `at` command's verbose output and error reports read it). No I/O.
 */

export interface RingEntry {
  at: number;
  dir: 'in' | 'out';
  text: string;
}

export class TranscriptRing<E extends RingEntry = RingEntry> {
  private readonly ring: E[] = [];
  private start = 0;

  constructor(private readonly size: number) {}

  add(entry: E): void {
    if (this.ring.length < this.size) {
      this.ring.push(entry);
      return;
    }
    this.ring[this.start] = entry;
    this.start = (this.start + 1) % this.size;
  }

  entries(): E[] {
    return [...this.ring.slice(this.start), ...this.ring.slice(0, this.start)];
  }
}
