//! CPU references (filled per kernel).
