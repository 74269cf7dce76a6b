// RoundBook (js_bindings/src/leaf/round_book.js): the min_round a leaf's claims send.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RoundBook } from '../../js_bindings/src/leaf/round_book.js';

const train = (id, round) => ({ task_id: id, round, kind: 'train' });

test('a new book lets claims take any round', () => {
  assert.equal(new RoundBook().minRound(), 0);
});

test('held train tasks take their rounds: claims ask for the round after the latest', () => {
  const book = new RoundBook();
  book.hold(train('a', 2));
  book.hold({ task_id: 'b', round: '4' });  // kind defaults to train; the round may be a string
  assert.equal(book.minRound(), 5);
});

test('evaluate tasks take no round', () => {
  const book = new RoundBook();
  book.hold({ task_id: 'e', round: 7, kind: 'evaluate' });
  assert.equal(book.minRound(), 0);
  book.release({ task_id: 'e', round: 7, kind: 'evaluate' }, true);
  assert.equal(book.minRound(), 0, 'an evaluate task accepted does not take its round either');
});

test('an accepted task keeps its round taken; a dropped one frees it', () => {
  const book = new RoundBook();
  book.hold(train('a', 3));
  book.release(train('a', 3), false);
  assert.equal(book.minRound(), 0, 'dropped: round 3 is free again');
  book.hold(train('b', 3));
  book.release(train('b', 3), true);
  assert.equal(book.minRound(), 4, 'accepted: round 3 stays taken');
  book.hold(train('c', 1));
  book.release(train('c', 1), true);
  assert.equal(book.minRound(), 4, 'an older round accepted later does not lower it');
});

test('releasing a task the book does not hold changes nothing', () => {
  const book = new RoundBook();
  book.release(train('x', 9), true);
  assert.equal(book.minRound(), 0);
});
