// Package rowtest holds what the tests of the row families (packages
// rows, softmax and norm) share: looking families and shapes up, every
// variant's program at the model and odd shapes, the golden-file form of
// a program, and f32 arithmetic helpers.
package rowtest
