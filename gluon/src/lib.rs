//! TTGIR import (in progress).
