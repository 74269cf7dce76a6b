// PrefetchQueue: the jobs a leaf prepares ahead (a claim and, for a task, its model) while one
// task trains or uploads. At most `prefetch` wait in line, never more than maxTasks counting the
// tasks started, and leases held at once never exceed prefetch + 1: a slot is taken before each
// claim and kept by a job that brought a task until done() gives it back (the task uploaded,
// dropped or failed); a job without a task gives it back at once.
//
//   const queue = new PrefetchQueue({prefetch: 1, maxTasks, signal, prepare: () => claimAndDownload()});
//   const job = await queue.next();   // the oldest prepared job, else a new one
//   queue.fill(started);              // prepare ahead again
//   queue.done();                     // a task's lease is over

// A counting semaphore: what bounds the leases held at once.
class Slots {
  constructor(count) {
    this.free = count;
    this.waiting = [];
  }

  async acquire(signal) {
    while (this.free === 0) {
      await new Promise((resolve, reject) => {
        this.waiting.push(resolve);
        signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    this.free -= 1;
  }

  release() {
    this.free += 1;
    const next = this.waiting.shift();
    if (next) next();
  }
}

export class PrefetchQueue {
  /**
   * @param {object} options
   * @param {number} options.prefetch  jobs prepared ahead of the one running
   * @param {number} [options.maxTasks]  tasks the leaf takes in all
   * @param {AbortSignal} [options.signal]  aborts a wait for a slot
   * @param {() => Promise<{task?: object}>} options.prepare  one job; one with a task keeps its slot
   */
  constructor({ prefetch, maxTasks, signal, prepare }) {
    Object.assign(this, { prefetch, maxTasks, signal, prepare });
    this.slots = new Slots(prefetch + 1);
    this.waiting = [];
  }

  /** The oldest job prepared ahead, else a new one. */
  next() {
    return this.waiting.shift() ?? this.start();
  }

  /** Prepares ahead up to `prefetch` jobs, and no more than maxTasks counting `started`. */
  fill(started) {
    const { prefetch, maxTasks, waiting } = this;
    while (waiting.length < prefetch && (maxTasks === undefined || started + waiting.length < maxTasks)) {
      waiting.push(this.start());
    }
  }

  /** A task's slot given back. */
  done() {
    this.slots.release();
  }

  /** Jobs prepared ahead and never taken: each given to dispose(job) once it settles. */
  discard(dispose) {
    for (const job of this.waiting.splice(0)) job.then(dispose, () => {});
  }

  start() {
    const job = this.run();
    job.catch(() => {});  // observed when taken from the queue
    return job;
  }

  async run() {
    await this.slots.acquire(this.signal);
    let job;
    try {
      job = await this.prepare();
    } finally {
      if (!job?.task) this.slots.release();
    }
    return job;
  }
}
