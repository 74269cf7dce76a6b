// RoundBook: which rounds a leaf may still train. A leaf trains on one dataset, so it takes at
// most one train task per round: each claim says {"min_round": minRound()}, one past the latest
// round of a train task it holds or has had accepted, and the server hands it only train tasks of
// later rounds (evaluate tasks are not limited). A task dropped (410, 409, 400, failed training)
// frees its round again.
//
//   const book = new RoundBook();
//   book.hold(task);                 // claimed: its round is taken
//   book.release(task, accepted);    // uploaded (accepted) or dropped
//   client.claim(population, {minRound: book.minRound()});

export class RoundBook {
  constructor() {
    this.held = new Map();  // task id → round, train tasks claimed and not yet released
    this.acceptedRound = -1;
  }

  /** The lowest round a claim may take a train task of. */
  minRound() {
    return Math.max(this.acceptedRound, ...this.held.values()) + 1;
  }

  /** A claimed task; only train tasks take their round. */
  hold(task) {
    if ((task.kind ?? 'train') === 'train') this.held.set(task.task_id, Number(task.round));
  }

  /** A held task is done: `accepted` keeps its round taken, otherwise the round is free again. */
  release(task, accepted) {
    if (!this.held.delete(task.task_id)) return;
    if (accepted) this.acceptedRound = Math.max(this.acceptedRound, Number(task.round));
  }
}
