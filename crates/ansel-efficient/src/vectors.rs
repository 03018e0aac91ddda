//! Conditioning of word vectors before training: [`pca`] reduces a table's dimension
//! (training a Cosinenet on 384 d is 3-4x slower than on 50 d) and [`rescaled`] brings it to
//! GloVe's scale. PCA's eigen-decomposition runs in libtorch, which ansel-vectors does not link.

use ansel_torch::tch::{self, Kind, Tensor};
use ansel_vectors::{Result, VectorsError, WordVectors};

/// The table projected on its `dim` principal components (rows centred first), then scaled
/// by one factor so that a vector's root-mean-square component is `rms` (GloVe 50d's is about
/// 0.7; unit vectors of 384 d have 0.05, too small beside the Cosinenet's relatedness
/// features at the CNN's initial weights). Words keep their order. `dim` at most the table's.
pub(crate) fn pca(vectors: &WordVectors, dim: usize, rms: f64) -> Result<WordVectors> {
    let (n, d) = (vectors.words().len(), vectors.dim());
    if dim == 0 || dim > d {
        return Err(VectorsError::Missing(format!(
            "cannot reduce {d}-d vectors to {dim} dimensions"
        )));
    }
    if n < 2 {
        return Err(VectorsError::Missing(format!(
            "PCA needs at least 2 words, the table has {n}"
        )));
    }
    let rows = vectors.rows();
    let projected = tch::no_grad(|| {
        let x = Tensor::from_slice(&rows)
            .reshape([n as i64, d as i64])
            .to_kind(Kind::Double);
        let (centred, axes, _) = ansel_torch::principal_axes(&x, dim);
        let z = centred.matmul(&axes);
        let mean_square = z.square().mean(Kind::Double).double_value(&[]);
        (z * (rms / mean_square.sqrt().max(1e-12)))
            .to_kind(Kind::Float)
            .contiguous()
    });
    let data = Vec::<f32>::try_from(projected.reshape([-1])).expect("a float tensor");
    WordVectors::new(vectors.words().to_vec(), dim, data)
}

/// The table with every vector multiplied by one factor so that the root-mean-square
/// component is `rms` (see [`pca`]).
pub(crate) fn rescaled(vectors: &WordVectors, rms: f64) -> Result<WordVectors> {
    let mut data = vectors.rows();
    let mean_square =
        data.iter().map(|x| (*x as f64).powi(2)).sum::<f64>() / data.len().max(1) as f64;
    let factor = (rms / mean_square.sqrt().max(1e-12)) as f32;
    data.iter_mut().for_each(|x| *x *= factor);
    WordVectors::new(vectors.words().to_vec(), vectors.dim(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pca_keeps_the_main_directions_and_the_scale_asked_for() {
        // Points on a line in 3-d plus a little noise: one component carries almost all.
        let list: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
        let data: Vec<f32> = (0..20)
            .flat_map(|i| {
                let t = i as f32 - 9.5;
                let noise = ((i * 7) % 5) as f32 * 0.01;
                [t, 2.0 * t + noise, -t]
            })
            .collect();
        let table = WordVectors::new(list.clone(), 3, data).unwrap();
        let reduced = pca(&table, 1, 0.7).unwrap();
        assert_eq!((reduced.dim(), reduced.words()), (1, &list[..]));
        let values: Vec<f32> = list.iter().map(|w| reduced.get(w).unwrap()[0]).collect();
        let rms = (values.iter().map(|x| x * x).sum::<f32>() / 20.0).sqrt();
        assert!((rms - 0.7).abs() < 1e-4, "rms {rms}");
        // Monotone along the line (one sign or the other), and centred.
        let increasing = values.windows(2).all(|w| w[1] > w[0]);
        let decreasing = values.windows(2).all(|w| w[1] < w[0]);
        assert!(increasing || decreasing, "{values:?}");
        assert!(values.iter().sum::<f32>().abs() < 1e-3);
        assert!(pca(&table, 4, 0.7).is_err());
        let scaled = rescaled(&table, 0.5).unwrap();
        let all: Vec<f32> = list
            .iter()
            .flat_map(|w| scaled.get(w).unwrap().to_vec())
            .collect();
        let rms = (all.iter().map(|x| x * x).sum::<f32>() / all.len() as f32).sqrt();
        assert!((rms - 0.5).abs() < 1e-4, "rms {rms}");
    }
}
