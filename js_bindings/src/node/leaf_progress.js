// A one-line progress display of many leaves (fedleaf-simulate, demo): what each leaf is doing
// and the totals. On a terminal the line is redrawn in place; otherwise it is printed at most
// every 5 s.

import { formatBytes } from '../leaf/format_bytes.js';

export class LeafProgress {
  constructor(count, stream) {
    this.stream = stream;
    this.states = new Array(count).fill('starting');
    this.uploads = 0;
    this.dropped = 0;
    this.bytesUp = 0;
    this.bytesDown = 0;
    this.errors = [];
    this.lastPrint = 0;
    this.lastLine = '';
  }

  update(index, event) {
    switch (event.type) {
      case 'claimed': this.states[index] = 'downloading'; break;
      case 'downloaded': this.bytesDown += event.bytes; this.states[index] = 'training'; break;
      case 'trained': this.states[index] = 'uploading'; break;
      case 'uploaded': this.uploads += 1; this.bytesUp += event.bytes; this.states[index] = 'waiting'; break;
      case 'dropped': this.dropped += 1; this.states[index] = 'waiting'; break;
      case 'idle': this.states[index] = 'idle'; break;
      case 'finished': this.states[index] = 'finished'; break;
      case 'error': this.errors.push(`leaf ${index}: ${event.message}`); break;
      default: break;
    }
  }

  line() {
    const counts = {};
    for (const s of this.states) counts[s] = (counts[s] ?? 0) + 1;
    const states = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(', ');
    return `leaves: ${states} | uploads ${this.uploads} (${formatBytes(this.bytesUp)}), ` +
      `dropped ${this.dropped}, downloaded ${formatBytes(this.bytesDown)}`;
  }

  note(text) {
    if (this.stream.isTTY) this.stream.write('\r\x1b[2K');
    this.stream.write(`${text}\n`);
  }

  render(final = false) {
    const line = this.line();
    if (this.stream.isTTY) {
      this.stream.write(`\r\x1b[2K${line}${final ? '\n' : ''}`);
    } else if (final || (Date.now() - this.lastPrint > 5000 && line !== this.lastLine)) {
      this.stream.write(`${line}\n`);
      this.lastPrint = Date.now();
      this.lastLine = line;
    }
    while (this.errors.length) this.note(this.errors.shift());
  }
}
